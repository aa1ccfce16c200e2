// Package clientset adapts a client-go clientset to kube.Interface, for the
// daemon's unit tests, which use client-go's fake clientset. kruise-daemon
// itself must not import it: it links the all-groups clientset that package
// kube exists to avoid.
package clientset

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodekruise/kruise/pkg/daemon/kube"
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

func (a adapter) EventSink() record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: a.c.CoreV1().Events("")}
}
