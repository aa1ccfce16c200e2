// Package kube is kruise-daemon's client for the few core/v1 and
// coordination.k8s.io/v1 resources it uses: its node's pods, its Node, the
// pull secrets, Events and its heartbeat Lease.
//
// Why not client-go's clientset: k8s.io/client-go/kubernetes, its typed
// clients and its informers package all import k8s.io/client-go/kubernetes/scheme,
// whose init registers every built-in API group. That links and touches
// every k8s.io/api package at start-up, several MiB of resident memory on
// every node for kinds the daemon never sees. This client registers core/v1
// and coordination/v1 only and speaks to the API server exactly as the typed
// clients do (client-go's generic gentype client, protobuf preferred).
// Nothing in the daemon's import graph may import those packages; the
// clientset adapter for tests lives in the subpackage clientset.
package kube

import (
	"context"
	"fmt"
	"net/http"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// Resource reads and writes one kind, in one namespace ("" for a
// cluster-scoped kind, or for all namespaces). client-go's typed clients
// (fake ones too) have these methods.
type Resource[T runtime.Object, L runtime.Object] interface {
	ListerWatcher[L]
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// ListerWatcher lists and watches one kind; the typed clients of every
// group, kruise's too, have these methods.
type ListerWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Interface is what the daemon reaches outside apps.kruise.io.
type Interface interface {
	Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList]
	Nodes() Resource[*corev1.Node, *corev1.NodeList]
	Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList]
	Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	// EventSink writes Events (in the Event's own namespace).
	EventSink() record.EventSink
}

// Client implements Interface against an API server.
type Client struct {
	core, coordination rest.Interface
	params             runtime.ParameterCodec
}

// NewForConfigAndClient builds the client on cfg, sharing httpClient (so
// that all the daemon's clients share one connection pool).
func NewForConfigAndClient(cfg *rest.Config, httpClient *http.Client) (*Client, error) {
	scheme := runtime.NewScheme()
	// Each registers the meta/v1 option types (ListOptions, ...) for its
	// group version too, which the parameter codec needs.
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering core/v1: %w", err)
	}
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering coordination.k8s.io/v1: %w", err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	core, err := newRESTClient(cfg, httpClient, "/api", corev1.SchemeGroupVersion, scheme, codecs)
	if err != nil {
		return nil, err
	}
	coordination, err := newRESTClient(cfg, httpClient, "/apis", coordinationv1.SchemeGroupVersion, scheme, codecs)
	if err != nil {
		return nil, err
	}
	return &Client{core: core, coordination: coordination, params: runtime.NewParameterCodec(scheme)}, nil
}

// newRESTClient configures a REST client for one group version as the
// generated typed clients do.
func newRESTClient(cfg *rest.Config, httpClient *http.Client, apiPath string, gv schema.GroupVersion,
	scheme *runtime.Scheme, codecs serializer.CodecFactory) (*rest.RESTClient, error) {
	c := *cfg
	c.APIPath = apiPath
	c.GroupVersion = &gv
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the %s REST client: %w", gv, err)
	}
	return rc, nil
}

// Pods implements Interface.
func (c *Client) Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList] {
	return gentype.NewClientWithList[*corev1.Pod, *corev1.PodList]("pods", c.core, c.params, namespace,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} },
		gentype.PrefersProtobuf[*corev1.Pod]())
}

// Nodes implements Interface.
func (c *Client) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return gentype.NewClientWithList[*corev1.Node, *corev1.NodeList]("nodes", c.core, c.params, "",
		func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} },
		gentype.PrefersProtobuf[*corev1.Node]())
}

// Secrets implements Interface.
func (c *Client) Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList] {
	return gentype.NewClientWithList[*corev1.Secret, *corev1.SecretList]("secrets", c.core, c.params, namespace,
		func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} },
		gentype.PrefersProtobuf[*corev1.Secret]())
}

// Leases implements Interface.
func (c *Client) Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return gentype.NewClientWithList[*coordinationv1.Lease, *coordinationv1.LeaseList]("leases", c.coordination, c.params, namespace,
		func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} },
		gentype.PrefersProtobuf[*coordinationv1.Lease]())
}

// EventSink implements Interface.
func (c *Client) EventSink() record.EventSink { return eventSink{c.core} }
