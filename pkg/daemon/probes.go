package daemon

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/podprobe"
	"github.com/nodekruise/kruise/pkg/process/features"
)

// withNodeProbes is on with the apps.kruise.io client and either gate that
// puts probes in a NodePodProbe: PodProbeMarkerGate or EnhancedLivenessProbe.
func withNodeProbes(e *env) bool {
	gate := e.featureGate()
	return withKruise(e) && (gate.Enabled(features.PodProbeMarkerGate) || gate.Enabled(features.EnhancedLivenessProbe))
}

// buildNodeProber makes the node prober. It watches this node's
// NodePodProbe only (field selector metadata.name=<node>) and reads pods
// through the shared node pod informer.
func buildNodeProber(_ context.Context, e *env) (*component, error) {
	metrics := podprobe.NewMetrics()
	if err := e.register(metrics.Collectors()...); err != nil {
		return nil, err
	}
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, e.opts.NodeName).String()
	npps := kube.NewInformer(e.kruiseClient.NodePodProbes(), &appsv1alpha1.NodePodProbe{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector }, kube.StripManagedFields)
	p, err := podprobe.New(podprobe.Config{
		Client:        e.kruiseClient.NodePodProbes(),
		NodeName:      e.opts.NodeName,
		NodePodProbes: npps,
		Pods:          e.nodePods(),
		Runtime:       e.runtime,
		Metrics:       metrics,
	})
	if err != nil {
		return nil, err
	}
	return &component{
		informers: []informer{{name: "pods", syncer: e.nodePods()}, {name: "nodepodprobes", syncer: npps}},
		run:       p.Run,
	}, nil
}
