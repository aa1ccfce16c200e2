package daemon

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/daemon/crrexec"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
)

// buildCRRExecutor makes the CRR executor. It reads the admitted,
// unfinished CRRs of this node (label selector) and this node's pods (field
// selector spec.nodeName); nothing is listed cluster-wide.
func buildCRRExecutor(_ context.Context, e *env) (*component, error) {
	metrics := crrexec.NewMetrics()
	if err := e.register(metrics.Collectors()...); err != nil {
		return nil, err
	}
	ex, err := crrexec.New(crrexec.Config{
		KruiseClient: e.kruiseClient,
		CRRs:         e.nodeCRRs(),
		Pods:         e.nodePods(),
		Runtime:      e.runtime,
		Recorder:     e.recorder,
		Metrics:      metrics,
	})
	if err != nil {
		return nil, err
	}
	workers := e.opts.CRRWorkers
	return &component{
		informers: e.crrInformers(),
		run: func(ctx context.Context) error {
			klog.FromContext(ctx).Info("CRR informers synced; starting the CRR executor", "workers", workers)
			return ex.Run(ctx, workers)
		},
	}, nil
}

// crrInformers are what the CRR executor reads.
func (e *env) crrInformers() []informer {
	return []informer{{name: "pods", syncer: e.nodePods()}, {name: "containerrecreaterequests", syncer: e.nodeCRRs()}}
}

// nodePodInformer is an informer on the pods of node only (field selector
// spec.nodeName=<node>) that caches each pod slimmed to the fields the
// daemon reads (kube.SlimPod).
func nodePodInformer(client kube.Interface, node string) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("spec.nodeName", node).String()
	return kube.NewInformer(client.Pods(metav1.NamespaceAll), &corev1.Pod{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector }, kube.SlimPod)
}
