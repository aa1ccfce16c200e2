package coexist

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// NodePodFactory returns an informer factory whose pod informer lists and
// watches the pods of node only (field selector spec.nodeName=<node>), for
// a daemon that has no such informer already.
func NodePodFactory(client kubernetes.Interface, node string) informers.SharedInformerFactory {
	selector := fields.OneTermEqualSelector("spec.nodeName", node).String()
	return informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = selector }))
}
