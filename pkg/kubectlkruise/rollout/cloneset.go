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
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	partitionpkg "github.com/nodekruise/kruise/pkg/workload/partition"
)

// cloneSetKind adapts CloneSets, read as v1alpha1: the version every
// OpenKruise release serves, whose fields (spec.updateStrategy.paused and
// partition) are those users know.
type cloneSetKind struct{}

type cloneSet struct{ *appsv1alpha1.CloneSet }

func (cloneSetKind) get(ctx context.Context, c *clients, namespace, name string) (workload, error) {
	cs, err := c.kruise.AppsV1alpha1().CloneSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cloneSet{cs}, nil
}

func (cloneSetKind) listWatch(c *clients, namespace, name string) (cache.ListerWatcher, runtime.Object) {
	return oneObject(c.kruise.AppsV1alpha1().CloneSets(namespace), name), &appsv1alpha1.CloneSet{}
}

func (cloneSetKind) patch(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (workload, error) {
	cs, err := c.kruise.AppsV1alpha1().CloneSets(namespace).Patch(ctx, name, pt, data, opts)
	if err != nil {
		return nil, err
	}
	return cloneSet{cs}, nil
}

func (cloneSetKind) pausePatch(paused bool) []byte {
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"paused":%t}}}`, paused)
}

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
