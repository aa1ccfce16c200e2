package daemon

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/daemon/kube"
)

// nodeWatch is an informer on this daemon's own Node and nothing else: the
// list and watch carry the field selector metadata.name=<node>, so the
// daemon never lists cluster-wide.
type nodeWatch struct {
	name     string
	informer cache.SharedIndexInformer
	lister   corelisters.NodeLister
}

func newNodeWatch(client kube.Interface, nodeName string, logger klog.Logger) (*nodeWatch, error) {
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, nodeName).String()
	inf := kube.NewInformer(client.Nodes(), &corev1.Node{}, func(o *metav1.ListOptions) { o.FieldSelector = selector }, nodeMetaOnly)
	w := &nodeWatch{name: nodeName, informer: inf, lister: corelisters.NewNodeLister(inf.GetIndexer())}

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

// nodeMetaOnly caches a Node's metadata (without managedFields) only: the
// daemon reads whether its Node exists, nothing more, while a Node's status
// (its image list, conditions, addresses) is most of its size.
func nodeMetaOnly(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	meta := n.ObjectMeta
	meta.ManagedFields = nil
	return &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: meta}, nil
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
