package daemon

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/daemon/recreate"
	"github.com/nodekruise/kruise/pkg/events"
)

// crrWatch holds the node-scoped informers of the CRR executor: the
// admitted, unfinished CRRs of this node (label selector) and this node's
// pods (field selector spec.nodeName). Nothing is listed cluster-wide.
type crrWatch struct {
	podFactory   informers.SharedInformerFactory
	crrFactory   kruiseinformers.SharedInformerFactory
	pods         cache.SharedIndexInformer
	crrs         cache.SharedIndexInformer
	executor     *recreate.Executor
	stopRecorder func()
}

func newCRRWatch(ctx context.Context, client kubernetes.Interface, kruiseClient versioned.Interface, nodeName string,
	rt recreate.Runtime, metrics *recreate.Metrics) (*crrWatch, error) {
	podSelector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = podSelector }))
	crrSelector := labels.SelectorFromSet(labels.Set{
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}).String()
	crrFactory := kruiseinformers.NewSharedInformerFactoryWithOptions(kruiseClient, 0, kruiseinformers.WithTransform(stripManagedFields),
		kruiseinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = crrSelector }))

	recorder, stopRecorder, err := events.NewRecorder(ctx, client, componentName, nodeName)
	if err != nil {
		return nil, err
	}

	ex, err := recreate.New(recreate.Config{
		KruiseClient: kruiseClient,
		CRRs:         crrFactory.Apps().V1alpha1().ContainerRecreateRequests(),
		Pods:         podFactory.Core().V1().Pods(),
		Runtime:      rt,
		Recorder:     recorder,
		Metrics:      metrics,
	})
	if err != nil {
		stopRecorder()
		return nil, err
	}
	return &crrWatch{
		podFactory: podFactory, crrFactory: crrFactory, executor: ex, stopRecorder: stopRecorder,
		pods: podFactory.Core().V1().Pods().Informer(), crrs: crrFactory.Apps().V1alpha1().ContainerRecreateRequests().Informer(),
	}, nil
}

func (w *crrWatch) start(stop <-chan struct{}) {
	w.podFactory.Start(stop)
	w.crrFactory.Start(stop)
}

// synced reports whether both informers have synced.
func (w *crrWatch) synced() bool {
	return w.pods.HasSynced() && w.crrs.HasSynced()
}

// shutdown waits for the informers (their stop channel must be closed) and
// flushes the Event broadcaster.
func (w *crrWatch) shutdown() {
	w.podFactory.Shutdown()
	w.crrFactory.Shutdown()
	w.stopRecorder()
}

// stripManagedFields drops managedFields from cached objects: nothing here
// reads them.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
