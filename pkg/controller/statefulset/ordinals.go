package statefulset

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Reserved are the ordinals reserveOrdinals names, kept as ranges so that a range as wide as
// "0-2000000000" (which the API admits) costs nothing.
type Reserved []OrdinalRange

// OrdinalRange is the ordinals First to Last, both included.
type OrdinalRange struct{ First, Last int }

// Has is whether ordinal is reserved.
func (r Reserved) Has(ordinal int) bool {
	for _, s := range r {
		if ordinal >= s.First && ordinal <= s.Last {
			return true
		}
	}
	return false
}

// nextFree is the smallest ordinal at or above o that is not reserved.
func (r Reserved) nextFree(o int) int {
	for moved := true; moved; {
		moved = false
		for _, s := range r {
			if o >= s.First && o <= s.Last {
				o, moved = s.Last+1, true
			}
		}
	}
	return o
}

// ReservedOrdinals reads reserveOrdinals: integers and "a-b" ranges (both ends included). An
// entry that is neither, or a range that runs backwards, is an error naming it; negative
// integers reserve nothing.
func ReservedOrdinals(reserve []intstr.IntOrString) (Reserved, error) {
	var out Reserved
	for _, r := range reserve {
		if r.Type == intstr.Int {
			if r.IntVal >= 0 {
				out = append(out, OrdinalRange{int(r.IntVal), int(r.IntVal)})
			}
			continue
		}
		s := strings.TrimSpace(r.StrVal)
		if n, err := strconv.Atoi(s); err == nil {
			if n >= 0 {
				out = append(out, OrdinalRange{n, n})
			}
			continue
		}
		lo, hi, ok := strings.Cut(s, "-")
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b, errB := strconv.Atoi(strings.TrimSpace(hi))
		if !ok || errA != nil || errB != nil || a < 0 || b < a {
			return nil, fmt.Errorf("reserveOrdinals entry %q: want an ordinal or a range \"a-b\" with 0 <= a <= b", s)
		}
		out = append(out, OrdinalRange{a, b})
	}
	return out, nil
}

// WantedOrdinals are the ordinals a set of replicas pods runs, ascending: from start on,
// skipping the reserved ones, until there are replicas of them.
func WantedOrdinals(start, replicas int, reserved Reserved) []int {
	out := make([]int, 0, max(replicas, 0))
	for o := reserved.nextFree(max(start, 0)); len(out) < replicas; o = reserved.nextFree(o + 1) {
		out = append(out, o)
	}
	return out
}

// StartOrdinal is spec.ordinals.start, 0 when unset.
func StartOrdinal(set *appsv1beta1.StatefulSet) int {
	if set.Spec.Ordinals == nil {
		return 0
	}
	return int(set.Spec.Ordinals.Start)
}

// Replicas is spec.replicas, 1 when unset (the API default).
func Replicas(set *appsv1beta1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// PodName names the pod of set with ordinal: <set>-<ordinal>.
func PodName(set string, ordinal int) string { return fmt.Sprintf("%s-%d", set, ordinal) }

// ClaimName names the PVC of volume claim template vct for the pod of set with ordinal:
// <vct>-<set>-<ordinal>, as the built-in StatefulSet names them.
func ClaimName(vct, set string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", vct, set, ordinal)
}

// OrdinalOf is the ordinal in pod name of set; false when the name is not <set>-<n>.
func OrdinalOf(set, pod string) (int, bool) {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}
