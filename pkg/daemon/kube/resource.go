package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// resource is a typed client of one kind in one namespace ("" for a
// cluster-scoped kind, or for all namespaces). It makes the requests a
// generated typed client makes. It is not client-go's gentype.Client because
// package gentype also holds the generic fake clients: importing it links
// client-go/testing and through it the managed-fields and OpenAPI code,
// about a MiB of resident memory the daemon has no use for.
type resource[T object, L runtime.Object] struct {
	client    rest.Interface
	params    runtime.ParameterCodec
	plural    string
	namespace string
	// protobuf asks for protobuf (built-in kinds); custom resources speak JSON.
	protobuf bool
	newObj   func() T
	newList  func() L
}

// object is what the typed clients read and write: an API object with metadata.
type object interface {
	runtime.Object
	GetName() string
}

func (r *resource[T, L]) request(verb string) *rest.Request {
	return r.scoped(r.client.Verb(verb))
}

func (r *resource[T, L]) scoped(req *rest.Request) *rest.Request {
	return req.UseProtobufAsDefaultIfPreferred(r.protobuf).
		NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.plural)
}

// Get implements Resource.
func (r *resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObj()
	err := r.request("GET").Name(name).VersionedParams(&opts, r.params).Do(ctx).Into(out)
	return out, err
}

// List implements ListerWatcher.
func (r *resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.request("GET").VersionedParams(&opts, r.params).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch implements ListerWatcher.
func (r *resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.request("GET").VersionedParams(&opts, r.params).Timeout(timeoutOf(opts)).Watch(ctx)
}

// Create implements Resource.
func (r *resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObj()
	err := r.request("POST").VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Update implements Resource; name is the object's own.
func (r *resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return r.put(ctx, obj, opts, "")
}

// UpdateStatus writes obj's status subresource.
func (r *resource[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return r.put(ctx, obj, opts, "status")
}

func (r *resource[T, L]) put(ctx context.Context, obj T, opts metav1.UpdateOptions, subresource string) (T, error) {
	out := r.newObj()
	req := r.request("PUT").Name(obj.GetName())
	if subresource != "" {
		req = req.SubResource(subresource)
	}
	err := req.VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Patch patches the object name, or its subresources.
func (r *resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte,
	opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := r.newObj()
	err := r.scoped(r.client.Patch(pt)).Name(name).
		SubResource(subresources...).VersionedParams(&opts, r.params).Body(data).Do(ctx).Into(out)
	return out, err
}

// timeoutOf is the client-side timeout a list or watch asks for; 0 is none.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
