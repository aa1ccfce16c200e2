package ownership

import "k8s.io/apimachinery/pkg/runtime/schema"

// SameKind reports whether two apiVersion/kind pairs name the same kind: same kind and API
// group, any version of it (a reference written with v1beta1 names the v1alpha1 object too). A
// malformed apiVersion names nothing.
func SameKind(apiVersionA, kindA, apiVersionB, kindB string) bool {
	if kindA != kindB {
		return false
	}
	a, errA := schema.ParseGroupVersion(apiVersionA)
	b, errB := schema.ParseGroupVersion(apiVersionB)
	return errA == nil && errB == nil && a.Group == b.Group
}
