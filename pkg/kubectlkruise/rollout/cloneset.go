package rollout

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	partitionpkg "github.com/nodekruise/kruise/pkg/workload/partition"
)

// cloneSet adapts a CloneSet, read as v1alpha1 (see kruiseKindOf).
type cloneSet struct{ *appsv1alpha1.CloneSet }

func (w cloneSet) podSelector() *metav1.LabelSelector   { return w.Spec.Selector }
func (w cloneSet) podTemplate() *corev1.PodTemplateSpec { return &w.Spec.Template }
func (w cloneSet) lifecycle() *pub.Lifecycle            { return w.Spec.Lifecycle }

func (w cloneSet) isPaused() bool { return w.Spec.UpdateStrategy.Paused }

func (w cloneSet) counts() rolloutCounts {
	desired := int32(1)
	if w.Spec.Replicas != nil {
		desired = *w.Spec.Replicas
	}
	partition := int32(0)
	if p := w.Spec.UpdateStrategy.Partition; p != nil {
		// As the controller reads it.
		if v, err := partitionpkg.Count(p, int(desired)); err == nil {
			partition = int32(v)
		}
	}
	s := w.Status
	return rolloutCounts{
		observed:         s.ObservedGeneration >= w.Generation,
		desired:          desired,
		total:            s.Replicas,
		partition:        partition,
		updated:          s.UpdatedReplicas,
		updatedReady:     s.UpdatedReadyReplicas,
		updatedAvailable: s.UpdatedAvailableReplicas,
		available:        s.AvailableReplicas,
		updateRevision:   s.UpdateRevision,
	}
}

func (w cloneSet) stalled() (string, bool) {
	for _, c := range w.Status.Conditions {
		if c.Type == appsv1alpha1.CloneSetConditionTypeProgressing && c.Status == corev1.ConditionFalse &&
			c.Reason == string(appsv1alpha1.CloneSetProgressDeadlineExceeded) {
			return c.Message, true
		}
	}
	return "", false
}
