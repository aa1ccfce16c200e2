package cronjobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func TestParseSchedule(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 7, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, schedule string
		tz             *string
		next           time.Time // zero: an error is expected
	}{
		{"five fields", "*/15 * * * *", nil, time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)},
		{"descriptor", "@hourly", nil, time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
		{"TZ prefix", "TZ=Asia/Shanghai 0 19 * * *", nil, time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
		{"CRON_TZ prefix", "CRON_TZ=Asia/Shanghai 0 19 * * *", nil, time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
		{"timeZone", "0 19 * * *", ptr.To("Asia/Shanghai"), time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
		{"timeZone UTC", "0 19 * * *", ptr.To("UTC"), time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)},
		{"timeZone with a TZ prefix", "TZ=UTC 0 19 * * *", ptr.To("UTC"), time.Time{}},
		{"empty timeZone", "0 19 * * *", ptr.To(""), time.Time{}},
		{"Local timeZone", "0 19 * * *", ptr.To("Local"), time.Time{}},
		{"unknown timeZone", "0 19 * * *", ptr.To("Mars/Olympus"), time.Time{}},
		{"six fields", "0 0 19 * * *", nil, time.Time{}},
		{"garbage", "every day", nil, time.Time{}},
		{"empty", "", nil, time.Time{}},
		// The parser panics on a TZ= prefix without a schedule after it.
		{"TZ without schedule", "TZ=UTC", nil, time.Time{}},
		{"bad TZ prefix", "TZ=Mars/Olympus 0 1 * * *", nil, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSchedule(tc.schedule, tc.tz)
			if tc.next.IsZero() {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.True(t, tc.next.Equal(s.Next(at)), "next %v, want %v", s.Next(at), tc.next)
		})
	}
}

func TestTimeZoneError(t *testing.T) {
	assert.NoError(t, TimeZoneError(nil))
	assert.NoError(t, TimeZoneError(ptr.To("Europe/Berlin")))
	assert.Error(t, TimeZoneError(ptr.To("")))
	assert.Error(t, TimeZoneError(ptr.To("local")))
	assert.Error(t, TimeZoneError(ptr.To("Europe/Nowhere")))
}
