package daemonset

import (
	"fmt"

	intstrutil "k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Budget is a DaemonSet's strategy resolved to node counts against desiredNumberScheduled.
type Budget struct {
	MaxUnavailable int
	MaxSurge       int
	// Partition is how many nodes keep their old pods.
	Partition int
	// Burst caps the pods created in one pass.
	Burst int
}

// ResolveBudget resolves ds's numbers: maxUnavailable and maxSurge rounded up, partition rounded
// down (as OpenKruise), burstReplicas rounded up and at least 1. With both maxUnavailable and
// maxSurge 0 (unset, or percentages of few nodes) maxUnavailable is 1, so an update always moves.
func ResolveBudget(ds *appsv1beta1.DaemonSet, desired int) (Budget, error) {
	b := Budget{Burst: appsv1beta1.DefaultDaemonSetBurstReplicas}
	if ds.Spec.BurstReplicas != nil {
		v, err := intstrutil.GetScaledValueFromIntOrPercent(ds.Spec.BurstReplicas, desired, true)
		if err != nil {
			return b, fmt.Errorf("spec.burstReplicas: %w", err)
		}
		b.Burst = max(1, v)
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		var err error
		if ru.MaxUnavailable != nil {
			if b.MaxUnavailable, err = intstrutil.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true); err != nil {
				return b, fmt.Errorf("updateStrategy.rollingUpdate.maxUnavailable: %w", err)
			}
		}
		if ru.MaxSurge != nil && ru.Type != appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType {
			if b.MaxSurge, err = intstrutil.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true); err != nil {
				return b, fmt.Errorf("updateStrategy.rollingUpdate.maxSurge: %w", err)
			}
		}
		if ru.Partition != nil {
			if b.Partition, err = intstrutil.GetScaledValueFromIntOrPercent(ru.Partition, desired, false); err != nil {
				return b, fmt.Errorf("updateStrategy.rollingUpdate.partition: %w", err)
			}
		}
	}
	if b.MaxSurge > 0 {
		b.MaxUnavailable = 0 // one or the other: a node's pod goes before or after its replacement
	} else if b.MaxUnavailable <= 0 {
		b.MaxUnavailable = 1
	}
	return b, nil
}
