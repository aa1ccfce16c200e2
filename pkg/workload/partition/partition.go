// Package partition resolves a number-or-percent `partition` (CloneSet, SidecarSet) to a count of pods, by
// OpenKruise's rule, for every reader of it (controller, CLI, metrics), so they agree.
package partition

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Count is how many of replicas pods v keeps at the old revision. A number is taken as is; a
// percentage rounds up, so a partition above 0% keeps at least one pod, but one below 100% of
// more than one replica keeps at most replicas-1, so that some pod is still updated (99% of 4 is
// 3, not 4). The result is at most replicas; nil is 0; a negative number is an error (the
// schema refuses it; OpenKruise reads it as 0).
func Count(v *intstr.IntOrString, replicas int) (int, error) {
	if v == nil {
		return 0, nil
	}
	replicas = max(replicas, 0)
	n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, true)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%q is negative", v.String())
	}
	if v.Type == intstr.String && n >= replicas && replicas > 1 {
		// The percentage itself, as a count of 100.
		pct, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true)
		if err != nil {
			return 0, err
		}
		if pct < 100 {
			n = replicas - 1
		}
	}
	return min(n, replicas), nil
}
