// Package kube is kruise-daemon's client for the few resources it uses: its
// node's pods, its Node, the pull secrets, Events and its heartbeat Lease
// (core/v1, coordination.k8s.io/v1), and its node's ContainerRecreateRequests,
// NodeImage and NodePodProbe (apps.kruise.io).
//
// Why not client-go's clientset and kruise's generated one: the built-in
// clientset, its typed clients and its informers import
// k8s.io/client-go/kubernetes/scheme, whose init registers every built-in API
// group; every generated typed client imports client-go's gentype, whose
// package holds the fake clients too and links client-go/testing, managed
// fields and OpenAPI models. Either links and touches several MiB at
// start-up on every node for code the daemon never runs. This client
// registers the daemon's own kinds only and makes the requests the typed
// clients make (protobuf for built-in kinds). Nothing in the daemon's import
// graph may import those packages; the adapter of client-go's and kruise's
// (fake) clientsets for tests lives in the subpackage clientset.
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
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
	EventSink() recorder.Sink
}

// CRRGetter reaches the ContainerRecreateRequests the CRR executor runs.
type CRRGetter interface {
	ContainerRecreateRequests(namespace string) CRRClient
}

// CRRClient watches ContainerRecreateRequests and writes their status.
type CRRClient interface {
	ListerWatcher[*appsv1alpha1.ContainerRecreateRequestList]
	UpdateStatus(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest,
		opts metav1.UpdateOptions) (*appsv1alpha1.ContainerRecreateRequest, error)
}

// NodeImageGetter reaches the NodeImages the image puller serves.
type NodeImageGetter interface {
	NodeImages() NodeImageClient
}

// NodeImageClient watches NodeImages and patches their status.
type NodeImageClient interface {
	ListerWatcher[*appsv1beta1.NodeImageList]
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (*appsv1beta1.NodeImage, error)
}

// NodePodProbeGetter reaches the NodePodProbe whose probes the prober runs.
type NodePodProbeGetter interface {
	NodePodProbes() NodePodProbeClient
}

// NodePodProbeClient watches NodePodProbes and patches their status.
type NodePodProbeClient interface {
	ListerWatcher[*appsv1alpha1.NodePodProbeList]
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (*appsv1alpha1.NodePodProbe, error)
}

// Kruise is what the daemon reaches in apps.kruise.io.
type Kruise interface {
	CRRGetter
	NodeImageGetter
	NodePodProbeGetter
}

// Client implements Interface and Kruise against an API server.
type Client struct {
	scheme                            *runtime.Scheme
	core, coordination, alpha1, beta1 rest.Interface
	params                            runtime.ParameterCodec
}

// NewForConfigAndClient builds the client on cfg, sharing httpClient (so
// that all the daemon's requests share one connection pool).
func NewForConfigAndClient(cfg *rest.Config, httpClient *http.Client) (*Client, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)
	c := &Client{scheme: scheme, params: runtime.NewParameterCodec(scheme)}
	for _, gv := range []struct {
		client  *rest.Interface
		apiPath string
		gv      schema.GroupVersion
	}{
		{&c.core, "/api", corev1.SchemeGroupVersion},
		{&c.coordination, "/apis", coordinationv1.SchemeGroupVersion},
		{&c.alpha1, "/apis", appsv1alpha1.SchemeGroupVersion},
		{&c.beta1, "/apis", appsv1beta1.SchemeGroupVersion},
	} {
		rc, err := newRESTClient(cfg, httpClient, gv.apiPath, gv.gv, scheme, codecs)
		if err != nil {
			return nil, err
		}
		*gv.client = rc
	}
	return c, nil
}

// NewScheme returns a scheme of the kinds the daemon reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	// Each registers the meta/v1 option types (ListOptions, ...) for its
	// group version too, which the parameter codec needs.
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme,
		appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the daemon's scheme: %w", err)
		}
	}
	return scheme, nil
}

// Scheme knows every kind the client reads and writes: the kinds the
// daemon records Events on.
func (c *Client) Scheme() *runtime.Scheme { return c.scheme }

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
	return newResource(c, c.core, "pods", namespace, true,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

// Nodes implements Interface.
func (c *Client) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return newResource(c, c.core, "nodes", "", true,
		func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

// Secrets implements Interface.
func (c *Client) Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList] {
	return newResource(c, c.core, "secrets", namespace, true,
		func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

// Leases implements Interface.
func (c *Client) Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return newResource(c, c.coordination, "leases", namespace, true,
		func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

// ContainerRecreateRequests implements CRRGetter.
func (c *Client) ContainerRecreateRequests(namespace string) CRRClient {
	return newResource(c, c.alpha1, "containerrecreaterequests", namespace, false,
		func() *appsv1alpha1.ContainerRecreateRequest { return &appsv1alpha1.ContainerRecreateRequest{} },
		func() *appsv1alpha1.ContainerRecreateRequestList { return &appsv1alpha1.ContainerRecreateRequestList{} })
}

// NodeImages implements NodeImageGetter.
func (c *Client) NodeImages() NodeImageClient {
	return newResource(c, c.beta1, "nodeimages", "", false,
		func() *appsv1beta1.NodeImage { return &appsv1beta1.NodeImage{} },
		func() *appsv1beta1.NodeImageList { return &appsv1beta1.NodeImageList{} })
}

// NodePodProbes implements NodePodProbeGetter.
func (c *Client) NodePodProbes() NodePodProbeClient {
	return newResource(c, c.alpha1, "nodepodprobes", "", false,
		func() *appsv1alpha1.NodePodProbe { return &appsv1alpha1.NodePodProbe{} },
		func() *appsv1alpha1.NodePodProbeList { return &appsv1alpha1.NodePodProbeList{} })
}

func newResource[T object, L runtime.Object](c *Client, client rest.Interface, plural, namespace string, protobuf bool,
	newObj func() T, newList func() L) *resource[T, L] {
	return &resource[T, L]{client: client, params: c.params, plural: plural, namespace: namespace,
		protobuf: protobuf, newObj: newObj, newList: newList}
}

// EventSink implements Interface.
func (c *Client) EventSink() recorder.Sink { return eventSink{c.core} }
