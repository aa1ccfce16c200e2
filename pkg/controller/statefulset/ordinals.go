package statefulset

import (
	"fmt"
	"strconv"
	"strings"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

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
