package gen

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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

// RevisionOtherThan reads namespace's ControllerRevisions from client and returns the first
// not named name: the update revision a controller created next to the current one.
func RevisionOtherThan(ctx context.Context, client kubernetes.Interface, namespace, name string) (*appsv1.ControllerRevision, error) {
	revs, err := client.AppsV1().ControllerRevisions(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	for i := range revs.Items {
		if revs.Items[i].Name != name {
			return &revs.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no ControllerRevision but %s in %s", name, namespace)
}
