package rollout

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// daemonSet adapts an Advanced DaemonSet, read as v1alpha1 (see kruiseKindOf).
type daemonSet struct{ *appsv1alpha1.DaemonSet }

func (w daemonSet) podSelector() *metav1.LabelSelector   { return w.Spec.Selector }
func (w daemonSet) podTemplate() *corev1.PodTemplateSpec { return &w.Spec.Template }

func (w daemonSet) lifecycle() *pub.Lifecycle { return w.Spec.Lifecycle }

func (w daemonSet) isPaused() bool {
	ru := w.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.Paused != nil && *ru.Paused
}

func (w daemonSet) counts() rolloutCounts {
	s := w.Status
	desired := s.DesiredNumberScheduled
	partition := int32(0)
	if ru := w.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		// A percentage is of the nodes, rounded down, as the controller reads it.
		if v, err := intstrutil.GetScaledValueFromIntOrPercent(ru.Partition, int(desired), false); err == nil {
			partition = int32(min(v, int(desired)))
		}
	}
	return rolloutCounts{
		observed:         s.ObservedGeneration >= w.Generation,
		desired:          desired,
		total:            s.CurrentNumberScheduled,
		partition:        partition,
		updated:          s.UpdatedNumberScheduled,
		updatedReady:     -1,
		updatedAvailable: -1,
		available:        s.NumberAvailable,
		updateRevision:   s.DaemonSetHash,
	}
}

// stalled: an Advanced DaemonSet has no progress deadline (use --timeout).
func (w daemonSet) stalled() (string, bool) { return "", false }
