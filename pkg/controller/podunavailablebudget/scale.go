package podunavailablebudget

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// NewScaleFunc reads replicas through the scale subresource of any kind that has one, with the
// kinds' resources found through discovery (cached; asked again for a kind not known yet). It
// calls the API server only when used.
func NewScaleFunc(disc discovery.DiscoveryInterface) podbudget.ScaleFunc {
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	client := scale.New(disc.RESTClient(), mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	return func(ctx context.Context, namespace string, gk schema.GroupKind, name string) (int32, bool, error) {
		m, err := mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			// A kind installed since discovery was cached.
			mapper.Reset()
			m, err = mapper.RESTMapping(gk)
		}
		if meta.IsNoMatchError(err) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("finding the resource of %s: %w", gk, err)
		}
		s, err := client.Scales(namespace).Get(ctx, m.Resource.GroupResource(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && gone(err, name):
			return 0, true, nil
		case apierrors.IsNotFound(err):
			// No scale subresource: the pods are counted.
			return 0, false, nil
		case apierrors.IsForbidden(err):
			// kruise's role reads the scale of the kinds it knows; a budget on another kind counts
			// its pods unless the role is extended (docs/podunavailablebudget.md).
			klog.FromContext(ctx).V(2).Info("Not allowed to read a scale subresource; counting pods", "kind", gk, "name", name)
			return 0, false, nil
		case err != nil:
			return 0, false, fmt.Errorf("reading the scale of %s %s/%s: %w", gk, namespace, name, err)
		}
		return s.Spec.Replicas, true, nil
	}
}

// gone says whether a NotFound from a scale read is about the object itself (it names it), not
// about a kind without a scale subresource.
func gone(err error, name string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}
