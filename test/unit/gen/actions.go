package gen

import (
	"k8s.io/apimachinery/pkg/api/meta"
	k8stesting "k8s.io/client-go/testing"
)

// Writes lists a fake clientset's creates and deletes of resource as "create <name>" and
// "delete <name>", in order: what a test asserts a controller wrote.
func Writes(actions []k8stesting.Action, resource string) []string {
	var out []string
	for _, a := range actions {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			if a.GetVerb() != "create" {
				continue
			}
			if obj, err := meta.Accessor(a.GetObject()); err == nil {
				out = append(out, "create "+obj.GetName())
			}
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	return out
}
