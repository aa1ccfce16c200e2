package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// NewInformer returns an informer of example's kind that lists and watches
// through lw with tweak applied to every request (the daemon's node-scoped
// selectors), indexed by namespace like the generated informers, and that
// caches objects through transform (nil: as received). It does not resync.
func NewInformer[L runtime.Object](lw ListerWatcher[L], example runtime.Object, tweak func(*metav1.ListOptions),
	transform cache.TransformFunc) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&o)
			}
			return lw.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&o)
			}
			return lw.Watch(ctx, o)
		},
	}, example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if transform != nil {
		// Only fails once the informer has started.
		_ = inf.SetTransform(transform)
	}
	return inf
}

// StripManagedFields is a transform that drops managedFields from cached
// objects: nothing in the daemon reads them, and they are often the largest
// part of an object's metadata.
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
