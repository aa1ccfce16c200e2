package daemon

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// nodeWatch is an informer on this daemon's own Node and nothing else: the
// list and watch carry the field selector metadata.name=<node>, so the
// daemon never lists cluster-wide.
type nodeWatch struct {
	name     string
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   corelisters.NodeLister
}

func newNodeWatch(client kubernetes.Interface, nodeName string, logger klog.Logger) (*nodeWatch, error) {
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, nodeName).String()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = selector }))
	nodes := factory.Core().V1().Nodes()
	w := &nodeWatch{name: nodeName, factory: factory, informer: nodes.Informer(), lister: nodes.Lister()}

	_, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok && n.Name == nodeName {
				logger.Info("Watching own node", "node", klog.KObj(n))
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if n, ok := obj.(*corev1.Node); ok && n.Name == nodeName {
				logger.Info("Own node was deleted", "node", klog.KObj(n))
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding node event handler: %w", err)
	}
	return w, nil
}

// Name implements server.Checker.
func (w *nodeWatch) Name() string { return "node" }

// Check implements server.Checker: ready when the informer has synced and
// the node exists in its cache.
func (w *nodeWatch) Check(*http.Request) error {
	if !w.informer.HasSynced() {
		return fmt.Errorf("informer for node %q has not synced", w.name)
	}
	if _, err := w.lister.Get(w.name); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %q does not exist", w.name)
		}
		return fmt.Errorf("reading node %q from cache: %w", w.name, err)
	}
	return nil
}
