package revision

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Writer is the API a History writes revisions through. Get reads past the
// cache, to tell a name collision from a revision the cache has not shown
// yet.
type Writer interface {
	Get(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error)
	Create(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	Update(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	// Delete deletes the revision only if its UID is uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
}

// ClientsetWriter writes revisions through client.
func ClientsetWriter(client kubernetes.Interface) Writer {
	return clientsetWriter{client: client}
}

type clientsetWriter struct {
	client kubernetes.Interface
}

func (w clientsetWriter) Get(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	return w.client.AppsV1().ControllerRevisions(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (w clientsetWriter) Create(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return w.client.AppsV1().ControllerRevisions(rev.Namespace).Create(ctx, rev, metav1.CreateOptions{})
}

func (w clientsetWriter) Update(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return w.client.AppsV1().ControllerRevisions(rev.Namespace).Update(ctx, rev, metav1.UpdateOptions{})
}

func (w clientsetWriter) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return w.client.AppsV1().ControllerRevisions(namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
}
