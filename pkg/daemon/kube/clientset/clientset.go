// Package clientset adapts client-go's clientset and kruise's generated one
// to kube.Interface and kube.Kruise, for the daemon's unit tests, which use
// their fakes. kruise-daemon itself must not import it: it links the
// all-groups clientset and the generated clients that package kube exists
// to avoid.
package clientset

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

// New returns c as a kube.Interface.
func New(c kubernetes.Interface) kube.Interface { return adapter{c} }

type adapter struct{ c kubernetes.Interface }

func (a adapter) Pods(ns string) kube.Resource[*corev1.Pod, *corev1.PodList] {
	return a.c.CoreV1().Pods(ns)
}

func (a adapter) Nodes() kube.Resource[*corev1.Node, *corev1.NodeList] { return a.c.CoreV1().Nodes() }

func (a adapter) Secrets(ns string) kube.Resource[*corev1.Secret, *corev1.SecretList] {
	return a.c.CoreV1().Secrets(ns)
}

func (a adapter) Leases(ns string) kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return a.c.CoordinationV1().Leases(ns)
}

func (a adapter) EventSink() recorder.Sink { return eventSink{a.c} }

type eventSink struct{ c kubernetes.Interface }

func (s eventSink) Create(ctx context.Context, e *corev1.Event) (*corev1.Event, error) {
	return s.c.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
}

func (s eventSink) Patch(ctx context.Context, namespace, name string, data []byte) (*corev1.Event, error) {
	return s.c.CoreV1().Events(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
}

// NewKruise returns c as a kube.Kruise.
func NewKruise(c versioned.Interface) kube.Kruise { return kruiseAdapter{c} }

type kruiseAdapter struct{ c versioned.Interface }

func (a kruiseAdapter) ContainerRecreateRequests(ns string) kube.CRRClient {
	return a.c.AppsV1alpha1().ContainerRecreateRequests(ns)
}

func (a kruiseAdapter) NodeImages() kube.NodeImageClient { return a.c.AppsV1beta1().NodeImages() }

func (a kruiseAdapter) NodePodProbes() kube.NodePodProbeClient {
	return a.c.AppsV1alpha1().NodePodProbes()
}
