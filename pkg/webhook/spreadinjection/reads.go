package spreadinjection

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/restmapper"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1alpha1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
)

// Spreads reads and writes WorkloadSpreads: List and Cached from a cache, Get and UpdateStatus
// live.
type Spreads interface {
	List(namespace string) ([]*appsv1alpha1.WorkloadSpread, error)
	Cached(namespace, name string) (*appsv1alpha1.WorkloadSpread, error)
	// ListLive lists the namespace's WorkloadSpreads from the API server: a pod routed here
	// whose WorkloadSpread the cache does not show yet (just created) is still placed.
	ListLive(ctx context.Context, namespace string) ([]*appsv1alpha1.WorkloadSpread, error)
	Get(ctx context.Context, namespace, name string) (*appsv1alpha1.WorkloadSpread, error)
	UpdateStatus(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) (*appsv1alpha1.WorkloadSpread, error)
}

// Targets reads a WorkloadSpread's target, any kind; nil without error when it does not exist.
type Targets interface {
	Get(ctx context.Context, namespace string, ref appsv1alpha1.TargetReference) (*unstructured.Unstructured, error)
}

// Pods reads the pod an eviction names (an eviction carries no pod).
type Pods interface {
	Get(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// ReplicaSetOwner is the controller of a ReplicaSet (a Deployment's pods are its ReplicaSets'),
// nil when it has none or is not known.
type ReplicaSetOwner func(namespace, name string) *metav1.OwnerReference

// CachedSpreads are Spreads over a lister and a client.
type CachedSpreads struct {
	Lister kruiselisters.WorkloadSpreadLister
	Client kruiseclient.WorkloadSpreadsGetter
}

// List implements Spreads.
func (s CachedSpreads) List(namespace string) ([]*appsv1alpha1.WorkloadSpread, error) {
	return s.Lister.WorkloadSpreads(namespace).List(labels.Everything())
}

// Cached implements Spreads.
func (s CachedSpreads) Cached(namespace, name string) (*appsv1alpha1.WorkloadSpread, error) {
	return s.Lister.WorkloadSpreads(namespace).Get(name)
}

// ListLive implements Spreads.
func (s CachedSpreads) ListLive(ctx context.Context, namespace string) ([]*appsv1alpha1.WorkloadSpread, error) {
	list, err := s.Client.WorkloadSpreads(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1alpha1.WorkloadSpread, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Get implements Spreads.
func (s CachedSpreads) Get(ctx context.Context, namespace, name string) (*appsv1alpha1.WorkloadSpread, error) {
	return s.Client.WorkloadSpreads(namespace).Get(ctx, name, metav1.GetOptions{})
}

// UpdateStatus implements Spreads.
func (s CachedSpreads) UpdateStatus(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) (*appsv1alpha1.WorkloadSpread, error) {
	return s.Client.WorkloadSpreads(ws.Namespace).UpdateStatus(ctx, ws, metav1.UpdateOptions{})
}

// DynamicTargets reads targets of any kind with a dynamic client, the kinds' resources found
// through discovery (cached; asked again for a kind installed since). Reading a kind needs
// kruise's role to allow it: the chart grants the kinds the reference supports; another kind's
// target is read as absent when forbidden (its percentages then count 0 replicas).
type DynamicTargets struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewDynamicTargets builds DynamicTargets; it calls the API server only when used.
func NewDynamicTargets(client dynamic.Interface, disc discovery.DiscoveryInterface) *DynamicTargets {
	return &DynamicTargets{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// Get implements Targets.
func (t *DynamicTargets) Get(ctx context.Context, namespace string, ref appsv1alpha1.TargetReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("targetRef apiVersion %q: %w", ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	m, err := t.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		t.mapper.Reset()
		m, err = t.mapper.RESTMapping(gk, gv.Version)
	}
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding the resource of %s: %w", gk, err)
	}
	obj, err := t.client.Resource(m.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", gk, namespace, ref.Name, err)
	}
	return obj, nil
}

// LivePods reads pods from the API server.
type LivePods struct{ Client corev1client.PodsGetter }

// Get implements Pods.
func (l LivePods) Get(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return l.Client.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ListerReplicaSetOwner reads ReplicaSets' controllers from a cache.
func ListerReplicaSetOwner(l appslisters.ReplicaSetLister) ReplicaSetOwner {
	return func(namespace, name string) *metav1.OwnerReference {
		rs, err := l.ReplicaSets(namespace).Get(name)
		if err != nil {
			return nil
		}
		return controllerOf(rs)
	}
}

func controllerOf(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(rs)
}
