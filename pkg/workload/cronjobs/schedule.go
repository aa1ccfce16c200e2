// Package cronjobs holds AdvancedCronJob's rules that more than one component needs: reading
// its schedule (cron syntax and time zone, as the built-in CronJob reads them), deciding which
// run is due after an outage, and building the job a run creates (the controller creates it;
// `kubectl kruise create job --from=acj/NAME` builds the same object by hand). It only reads API
// objects and the time it is given: no client, no clock.
package cronjobs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// HasTZPrefix reports whether a schedule names its own time zone (TZ= or CRON_TZ=). The
// built-in CronJob and OpenKruise both test for "TZ" anywhere in the string; so do we, so that
// the same objects are refused.
func HasTZPrefix(schedule string) bool { return strings.Contains(schedule, "TZ") }

// TimeZoneError says what is wrong with a spec.timeZone, or returns nil: nil is fine (the
// controller's zone), "" and "Local" are refused (they would depend on where the controller
// runs), anything else must be an IANA zone name the controller can load.
func TimeZoneError(tz *string) error {
	if tz == nil {
		return nil
	}
	switch {
	case *tz == "":
		return errors.New("timeZone must be unset or a non-empty IANA time zone name")
	case strings.EqualFold(*tz, "Local"):
		return errors.New("timeZone must be an explicit IANA time zone name, not Local")
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		return fmt.Errorf("unknown time zone %q: %w", *tz, err)
	}
	return nil
}

// ParseSchedule reads a schedule (five fields, the @hourly style descriptors, an optional TZ= or
// CRON_TZ= prefix) in timeZone when set, with the parser the built-in CronJob uses. The parser
// panics on a few malformed inputs; that is an error here.
func ParseSchedule(schedule string, timeZone *string) (sched cron.Schedule, err error) {
	if timeZone != nil {
		if HasTZPrefix(schedule) {
			return nil, errors.New("the schedule names a time zone (TZ= or CRON_TZ=) and so does timeZone: use one")
		}
		if err := TimeZoneError(timeZone); err != nil {
			return nil, err
		}
		schedule = "CRON_TZ=" + *timeZone + " " + schedule
	}
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule %q: %v", schedule, r)
		}
	}()
	sched, err = cron.ParseStandard(schedule)
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w", schedule, err)
	}
	return sched, nil
}

// SpecSchedule is ParseSchedule of an AdvancedCronJob's spec.
func SpecSchedule(spec *v1beta1.AdvancedCronJobSpec) (cron.Schedule, error) {
	return ParseSchedule(spec.Schedule, spec.TimeZone)
}
