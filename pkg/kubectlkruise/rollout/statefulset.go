package rollout

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// statefulSet adapts an Advanced StatefulSet, read as v1beta1.
type statefulSet struct{ *appsv1beta1.StatefulSet }

func (w statefulSet) podSelector() *metav1.LabelSelector   { return w.Spec.Selector }
func (w statefulSet) podTemplate() *corev1.PodTemplateSpec { return &w.Spec.Template }

func (w statefulSet) lifecycle() *pub.Lifecycle { return w.Spec.Lifecycle }

func (w statefulSet) isPaused() bool {
	ru := w.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.Paused
}

func (w statefulSet) counts() rolloutCounts {
	desired := int32(1)
	if w.Spec.Replicas != nil {
		desired = *w.Spec.Replicas
	}
	partition := int32(0)
	if ru := w.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = min(*ru.Partition, desired)
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

// stalled: an Advanced StatefulSet has no progress deadline (use --timeout).
func (w statefulSet) stalled() (string, bool) { return "", false }
