package daemon

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
	"github.com/nodekruise/kruise/pkg/daemon/recreate"
)

// crrWatch holds the node-scoped informers of the CRR executor: the
// admitted, unfinished CRRs of this node (label selector) and this node's
// pods (field selector spec.nodeName). Nothing is listed cluster-wide.
type crrWatch struct {
	*informerSet
	pods     cache.SharedIndexInformer
	executor *recreate.Executor
}

func newCRRWatch(client kube.Interface, kruiseClient kube.CRRGetter, nodeName string,
	rt recreate.Runtime, metrics *recreate.Metrics, rec recorder.EventRecorder) (*crrWatch, error) {
	pods := nodePodInformer(client, nodeName)
	crrSelector := labels.SelectorFromSet(labels.Set{
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}).String()
	crrs := kube.NewInformer(kruiseClient.ContainerRecreateRequests(metav1.NamespaceAll), &appsv1alpha1.ContainerRecreateRequest{},
		func(o *metav1.ListOptions) { o.LabelSelector = crrSelector }, kube.StripManagedFields)

	ex, err := recreate.New(recreate.Config{
		KruiseClient: kruiseClient,
		CRRs:         crrs,
		Pods:         pods,
		Runtime:      rt,
		Recorder:     rec,
		Metrics:      metrics,
	})
	if err != nil {
		return nil, err
	}
	return &crrWatch{informerSet: newInformerSet(pods, crrs), pods: pods, executor: ex}, nil
}

// nodePodInformer is an informer on the pods of node only (field selector
// spec.nodeName=<node>) that caches each pod slimmed to the fields the
// daemon reads (kube.SlimPod).
func nodePodInformer(client kube.Interface, node string) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("spec.nodeName", node).String()
	return kube.NewInformer(client.Pods(metav1.NamespaceAll), &corev1.Pod{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector }, kube.SlimPod)
}
