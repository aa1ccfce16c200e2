package advancedcronjob

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// create creates a run's job through the client of its kind.
func (c *Controller) create(ctx context.Context, obj cronjobs.Object) (cronjobs.Object, error) {
	opts := metav1.CreateOptions{}
	switch o := obj.(type) {
	case *batchv1.Job:
		return c.client.BatchV1().Jobs(o.Namespace).Create(ctx, o, opts)
	case *v1beta1.BroadcastJob:
		return c.kruiseClient.AppsV1beta1().BroadcastJobs(o.Namespace).Create(ctx, o, opts)
	case *v1beta1.ImageListPullJob:
		return c.kruiseClient.AppsV1beta1().ImageListPullJobs(o.Namespace).Create(ctx, o, opts)
	}
	return nil, fmt.Errorf("unknown job type %T", obj)
}

// get reads a job of kind, live.
func (c *Controller) get(ctx context.Context, kind v1beta1.TemplateKind, ns, name string) (cronjobs.Object, error) {
	opts := metav1.GetOptions{}
	switch kind {
	case v1beta1.JobTemplate:
		return c.client.BatchV1().Jobs(ns).Get(ctx, name, opts)
	case v1beta1.BroadcastJobTemplate:
		return c.kruiseClient.AppsV1beta1().BroadcastJobs(ns).Get(ctx, name, opts)
	case v1beta1.ImageListPullJobTemplate:
		return c.kruiseClient.AppsV1beta1().ImageListPullJobs(ns).Get(ctx, name, opts)
	}
	return nil, fmt.Errorf("unknown job kind %q", kind)
}

// remove deletes a job in the background (its pods or pull jobs go after it), only the very
// object seen (UID precondition).
func (c *Controller) remove(ctx context.Context, obj cronjobs.Object) error {
	uid := obj.GetUID()
	opts := metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: &uid},
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	switch obj.(type) {
	case *batchv1.Job:
		return c.client.BatchV1().Jobs(ns).Delete(ctx, name, opts)
	case *v1beta1.BroadcastJob:
		return c.kruiseClient.AppsV1beta1().BroadcastJobs(ns).Delete(ctx, name, opts)
	case *v1beta1.ImageListPullJob:
		return c.kruiseClient.AppsV1beta1().ImageListPullJobs(ns).Delete(ctx, name, opts)
	}
	return fmt.Errorf("unknown job type %T", obj)
}
