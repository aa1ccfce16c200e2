package rollout

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// statefulSetKind adapts Advanced StatefulSets (read as v1beta1).
type statefulSetKind struct{}

type statefulSet struct{ *appsv1beta1.StatefulSet }

func (statefulSetKind) get(ctx context.Context, c *clients, namespace, name string) (workload, error) {
	set, err := c.kruise.AppsV1beta1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return statefulSet{set}, nil
}

func (statefulSetKind) listWatch(c *clients, namespace, name string) (cache.ListerWatcher, runtime.Object) {
	return oneObject(c.kruise.AppsV1beta1().StatefulSets(namespace), name), &appsv1beta1.StatefulSet{}
}

func (statefulSetKind) patch(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (workload, error) {
	set, err := c.kruise.AppsV1beta1().StatefulSets(namespace).Patch(ctx, name, pt, data, opts)
	if err != nil {
		return nil, err
	}
	return statefulSet{set}, nil
}

func (statefulSetKind) pausePatch(paused bool) []byte {
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`, paused)
}

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
