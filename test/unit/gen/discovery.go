package gen

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// APIResources is a discovery answer for groupVersion listing the resources named
// ("pods", "pods/resize", ...).
func APIResources(groupVersion string, names ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: groupVersion}
	for _, n := range names {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
	}
	return l
}

// PodResources is the core group's discovery answer for pods, with pods/resize when served
// (Kubernetes 1.33 and later).
func PodResources(resizeServed bool) *metav1.APIResourceList {
	if resizeServed {
		return APIResources("v1", "pods", "pods/resize")
	}
	return APIResources("v1", "pods")
}
