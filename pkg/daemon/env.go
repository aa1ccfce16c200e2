package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

// env is what the components are built from: the clients and settings, the
// process's one Event recorder and metrics registry, the node-scoped
// informers the components share, and the container runtime once the cri
// component has connected to it. Entries are built one at a time, so env
// needs no lock.
type env struct {
	deps
	opts *Options
	// recorder records every component's Events (one queue, one
	// correlation cache); it is flushed once everything has stopped.
	recorder recorder.EventRecorder
	// metrics is where components register their collectors, served on
	// /metrics.
	metrics prometheus.Registerer
	// runtime is the node's container runtime; the cri component sets it,
	// so the components listed after it can use it.
	runtime cri.Runtime

	pods, crrs cache.SharedIndexInformer
}

// register registers the collectors of a component.
func (e *env) register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := e.metrics.Register(c); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}

// nodePods is the one informer on this node's pods (field selector
// spec.nodeName=<node>); every component that reads pods shares it, so they
// are listed once.
func (e *env) nodePods() cache.SharedIndexInformer {
	if e.pods == nil {
		e.pods = nodePodInformer(e.client, e.opts.NodeName)
	}
	return e.pods
}

// nodeCRRs is the one informer on the admitted, unfinished CRRs of this node
// (label selector on the node name and the active label); it needs the
// apps.kruise.io client.
func (e *env) nodeCRRs() cache.SharedIndexInformer {
	if e.crrs == nil {
		selector := labels.SelectorFromSet(labels.Set{
			appsv1alpha1.ContainerRecreateRequestNodeNameKey: e.opts.NodeName,
			appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
		}).String()
		e.crrs = kube.NewInformer(e.kruiseClient.ContainerRecreateRequests(metav1.NamespaceAll), &appsv1alpha1.ContainerRecreateRequest{},
			func(o *metav1.ListOptions) { o.LabelSelector = selector }, kube.StripManagedFields)
	}
	return e.crrs
}
