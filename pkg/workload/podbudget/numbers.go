package podbudget

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// DesiredAvailable is how many of total replicas budget b keeps available: total minus
// maxUnavailable (a percentage of total rounded up), never below 0, or minAvailable (a percentage
// rounded up). No replicas (a workload scaled to zero) protect nothing: 0.
func DesiredAvailable(b *policyv1alpha1.PodUnavailableBudget, total int32) (int32, error) {
	if total <= 0 {
		return 0, nil
	}
	switch {
	case b.Spec.MaxUnavailable != nil:
		maxUnavailable, err := scaled(b.Spec.MaxUnavailable, total, "maxUnavailable")
		if err != nil {
			return 0, err
		}
		return max(0, total-maxUnavailable), nil
	case b.Spec.MinAvailable != nil:
		return scaled(b.Spec.MinAvailable, total, "minAvailable")
	}
	return 0, fmt.Errorf("neither maxUnavailable nor minAvailable is set")
}

// scaled is v, or v percent of total rounded up; negative values are 0.
func scaled(v *intstr.IntOrString, total int32, field string) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(total), true)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return int32(max(0, min(n, int(^uint32(0)>>1)))), nil
}

// TotalOverride returns the budget's pub.kruise.io/protect-total-replicas, when it is set and a
// non-negative integer (the validating webhook refuses other values; they are ignored here).
func TotalOverride(b *policyv1alpha1.PodUnavailableBudget) (int32, bool) {
	v, ok := b.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// ProtectsUnready reports whether the budget counts running pods that are not ready as
// available (pub.kruise.io/protect-unready-pods, a kruise extension for OpenKruise #1469).
func ProtectsUnready(b *policyv1alpha1.PodUnavailableBudget) bool {
	return b.Annotations[policyv1alpha1.PubProtectUnreadyPodsAnnotation] == "true"
}

// PerWorkload reports whether the budget applies to each workload of its pods apart
// (pub.kruise.io/budget-per-workload, a kruise extension for OpenKruise #1470). Only a selector
// budget can: a targetRef budget covers one workload.
func PerWorkload(b *policyv1alpha1.PodUnavailableBudget) bool {
	return b.Spec.Selector != nil && b.Annotations[policyv1alpha1.PubBudgetPerWorkloadAnnotation] == "true"
}
