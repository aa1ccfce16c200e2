package rollout

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// daemonSetKind adapts Advanced DaemonSets, read as v1alpha1, the version
// every OpenKruise release serves.
type daemonSetKind struct{}

type daemonSet struct{ *appsv1alpha1.DaemonSet }

func (daemonSetKind) get(ctx context.Context, c *clients, namespace, name string) (workload, error) {
	ds, err := c.kruise.AppsV1alpha1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return daemonSet{ds}, nil
}

func (daemonSetKind) listWatch(c *clients, namespace, name string) (cache.ListerWatcher, runtime.Object) {
	return oneObject(c.kruise.AppsV1alpha1().DaemonSets(namespace), name), &appsv1alpha1.DaemonSet{}
}

func (daemonSetKind) patch(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (workload, error) {
	ds, err := c.kruise.AppsV1alpha1().DaemonSets(namespace).Patch(ctx, name, pt, data, opts)
	if err != nil {
		return nil, err
	}
	return daemonSet{ds}, nil
}

func (daemonSetKind) pausePatch(paused bool) []byte {
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`, paused)
}

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
