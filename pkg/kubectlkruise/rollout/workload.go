package rollout

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// workload is a kruise workload read through its kind's adapter: what the
// rollout commands need, whatever the kind.
type workload interface {
	runtime.Object
	metav1.Object
	// podSelector selects the workload's pods.
	podSelector() *metav1.LabelSelector
	// podTemplate is spec.template.
	podTemplate() *corev1.PodTemplateSpec
	// lifecycle is spec.lifecycle: the hooks pods may wait on.
	lifecycle() *pub.Lifecycle
	// isPaused reports the kind's paused field.
	isPaused() bool
	// counts are the status figures a rollout is judged by.
	counts() rolloutCounts
	// stalled returns the Progressing condition's message when the rollout
	// passed its progress deadline (CloneSet only).
	stalled() (string, bool)
}

// rolloutCounts are a workload's status figures, of pods (CloneSet,
// Advanced StatefulSet) or of nodes (Advanced DaemonSet).
type rolloutCounts struct {
	// observed: the status is about the current spec.
	observed bool
	// desired is the number of pods wanted (replicas, or nodes that should
	// run the pod).
	desired int32
	// total is the number of pods there are, of any revision.
	total int32
	// partition is how many pods stay at the old revision.
	partition int32
	updated   int32
	// updatedReady and updatedAvailable are -1 when the kind does not
	// report them (Advanced DaemonSet): they are then counted from pods.
	updatedReady     int32
	updatedAvailable int32
	// available counts pods of every revision.
	available      int32
	updateRevision string
}

// target is how many pods must be updated for the rollout to be done.
func (c rolloutCounts) target() int32 { return max(c.desired-c.partition, 0) }

// kruiseKind reads, watches and patches one kruise kind.
type kruiseKind interface {
	get(ctx context.Context, c *clients, namespace, name string) (workload, error)
	// listWatch lists and watches the objects of namespace whose name is name.
	listWatch(c *clients, namespace, name string) (cache.ListerWatcher, runtime.Object)
	patch(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (workload, error)
	// pausePatch is the merge patch that sets the kind's paused field.
	pausePatch(paused bool) []byte
}

// kruiseKindOf returns the adapter of a kruise kind.
func kruiseKindOf(k *kindInfo) (kruiseKind, error) {
	switch k.gvk.Kind {
	case "CloneSet":
		// Read as v1alpha1: the version every OpenKruise release serves, whose fields
		// (spec.updateStrategy.paused and partition) are those users know.
		return kindAPI[*appsv1alpha1.CloneSet, *appsv1alpha1.CloneSetList]{
			api: func(c *clients, ns string) typedClient[*appsv1alpha1.CloneSet, *appsv1alpha1.CloneSetList] {
				return c.kruise.AppsV1alpha1().CloneSets(ns)
			},
			wrap:        func(o *appsv1alpha1.CloneSet) workload { return cloneSet{o} },
			example:     &appsv1alpha1.CloneSet{},
			pauseFormat: `{"spec":{"updateStrategy":{"paused":%t}}}`,
		}, nil
	case "StatefulSet":
		return kindAPI[*appsv1beta1.StatefulSet, *appsv1beta1.StatefulSetList]{
			api: func(c *clients, ns string) typedClient[*appsv1beta1.StatefulSet, *appsv1beta1.StatefulSetList] {
				return c.kruise.AppsV1beta1().StatefulSets(ns)
			},
			wrap:        func(o *appsv1beta1.StatefulSet) workload { return statefulSet{o} },
			example:     &appsv1beta1.StatefulSet{},
			pauseFormat: `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`,
		}, nil
	case "DaemonSet":
		// Read as v1alpha1, the version every OpenKruise release serves.
		return kindAPI[*appsv1alpha1.DaemonSet, *appsv1alpha1.DaemonSetList]{
			api: func(c *clients, ns string) typedClient[*appsv1alpha1.DaemonSet, *appsv1alpha1.DaemonSetList] {
				return c.kruise.AppsV1alpha1().DaemonSets(ns)
			},
			wrap:        func(o *appsv1alpha1.DaemonSet) workload { return daemonSet{o} },
			example:     &appsv1alpha1.DaemonSet{},
			pauseFormat: `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`,
		}, nil
	}
	return nil, fmt.Errorf("no kruise adapter for %s", k.gvk)
}

// getKruise reads the kruise workload t names, through its kind's adapter.
func getKruise(ctx context.Context, c *clients, t target) (kruiseKind, workload, error) {
	kk, err := kruiseKindOf(t.kind)
	if err != nil {
		return nil, nil, err
	}
	w, err := kk.get(ctx, c, t.namespace, t.name)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s %q in namespace %q: %w", t.kind.display, t.name, t.namespace, err)
	}
	return kk, w, nil
}

// typedClient is the part of one kind's typed client in a namespace the commands use.
type typedClient[T, L runtime.Object] interface {
	typedAPI[L]
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// kindAPI is the kruiseKind of the kind whose objects are T (lists L): every kind is read,
// watched and patched alike, through its typed client, and differs only in its adapter of
// objects (wrap) and where its paused field is.
type kindAPI[T, L runtime.Object] struct {
	api  func(c *clients, namespace string) typedClient[T, L]
	wrap func(T) workload
	// example is an empty T, the type the list-watch hands out.
	example runtime.Object
	// pauseFormat is the merge patch that sets the paused field, with a %t for its value.
	pauseFormat string
}

func (k kindAPI[T, L]) get(ctx context.Context, c *clients, namespace, name string) (workload, error) {
	obj, err := k.api(c, namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return k.wrap(obj), nil
}

func (k kindAPI[T, L]) listWatch(c *clients, namespace, name string) (cache.ListerWatcher, runtime.Object) {
	return oneObject[L](k.api(c, namespace), name), k.example
}

func (k kindAPI[T, L]) patch(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (workload, error) {
	obj, err := k.api(c, namespace).Patch(ctx, name, pt, data, opts)
	if err != nil {
		return nil, err
	}
	return k.wrap(obj), nil
}

func (k kindAPI[T, L]) pausePatch(paused bool) []byte { return fmt.Appendf(nil, k.pauseFormat, paused) }

// typedAPI is the List and Watch of one kind's typed client in a namespace.
type typedAPI[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// oneObject lists and watches only the object called name through api.
func oneObject[L runtime.Object](api typedAPI[L], name string) *cache.ListWatch {
	only := func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			only(&o)
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			only(&o)
			return api.Watch(watchContext(ctx), o)
		},
	}
}

// wrapKruise wraps a typed kruise object in its kind's adapter.
func wrapKruise(obj any) (workload, error) {
	switch o := obj.(type) {
	case *appsv1alpha1.CloneSet:
		return cloneSet{o}, nil
	case *appsv1beta1.StatefulSet:
		return statefulSet{o}, nil
	case *appsv1alpha1.DaemonSet:
		return daemonSet{o}, nil
	}
	return nil, fmt.Errorf("%T is not a kruise workload", obj)
}

// watchContext is the context a watch request is made with: not cancelled
// with ctx, because the informer stops the watch itself when ctx ends, and
// a request cancelled under it is logged as a failed watch.
func watchContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
