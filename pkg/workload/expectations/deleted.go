package expectations

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// DeletedObject returns the object of an informer's delete event: the
// object itself or, when the informer missed the deletion and learnt of it
// on a relist, the last state a cache.DeletedFinalStateUnknown holds. It
// returns false for anything else.
func DeletedObject(obj any) (metav1.Object, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(metav1.Object)
	return object, ok
}
