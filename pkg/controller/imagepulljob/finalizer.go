package imagepulljob

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
)

// The protection finalizer (v1beta1.ProtectionFinalizer, OpenKruise's
// apps.kruise.io/deletion-protection) holds a job that names pull secrets
// until the copies kruise-daemon reads (pkg/controller/pullsecrets) no
// longer name it. As in OpenKruise, a running job carries it and loses it
// when it completes or is deleted, once released; unlike OpenKruise, a job
// without pull secrets never gets it: its NodeImage entries are withdrawn
// without one (the node sync checks a job is really gone), so an outage or
// an uninstall strands no such job. A job deleted while kruise-controller is
// not running waits for it; docs/operations.md says how to release it.

// wantsProtection reports whether the job should carry the finalizer: it
// runs and names pull secrets.
func wantsProtection(job *v1beta1.ImagePullJob) bool {
	return job.DeletionTimestamp == nil && job.Status.CompletionTime == nil &&
		slices.ContainsFunc(job.Spec.PullSecrets, func(s string) bool { return s != "" })
}

// protect adds the finalizer to a running job naming pull secrets, and
// returns the job as written (or as it was, when there was nothing to do).
func (c *Controller) protect(ctx context.Context, job *v1beta1.ImagePullJob) (*v1beta1.ImagePullJob, error) {
	if !wantsProtection(job) || hasFinalizer(job, v1beta1.ProtectionFinalizer) {
		return job, nil
	}
	cp := job.DeepCopy()
	cp.Finalizers = append(cp.Finalizers, v1beta1.ProtectionFinalizer)
	out, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer %s: %w", v1beta1.ProtectionFinalizer, err)
	}
	klog.FromContext(ctx).V(2).Info("Added the protection finalizer", "finalizer", v1beta1.ProtectionFinalizer)
	return out, nil
}

// release removes the finalizer from a completed or deleting job once no
// NodeImage names it and no pull-secret copy does.
func (c *Controller) release(ctx context.Context, job *v1beta1.ImagePullJob) error {
	if !hasFinalizer(job, v1beta1.ProtectionFinalizer) {
		return nil
	}
	if nodes := c.nodesOwnedBy(string(job.UID)); len(nodes) > 0 {
		return nil // the node syncs withdraw them, then queue the job (keepRef)
	}
	if held := c.heldCopies(job); len(held) > 0 {
		// The pullsecrets controller releases them; the copies' updates
		// queue the job (copyChanged).
		klog.FromContext(ctx).V(4).Info("Waiting for pull-secret copies to be released", "copies", held)
		return nil
	}
	cp := job.DeepCopy()
	cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == v1beta1.ProtectionFinalizer })
	if _, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer %s: %w", v1beta1.ProtectionFinalizer, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed the protection finalizer", "finalizer", v1beta1.ProtectionFinalizer)
	return nil
}

// heldCopies lists the pull-secret copies that still name the job.
func (c *Controller) heldCopies(job *v1beta1.ImagePullJob) []string {
	key := job.Namespace + "/" + job.Name
	var out []string
	for _, name := range job.Spec.PullSecrets {
		if name == "" {
			continue
		}
		ref := pullsecrets.CopyRef(job.Namespace, name)
		if slices.Contains(out, ref.Name) {
			continue
		}
		cp, err := c.copyLister.Secrets(ref.Namespace).Get(ref.Name)
		if err != nil {
			continue
		}
		if slices.Contains(pullsecrets.ReferencedJobs(cp), key) {
			out = append(out, ref.Name)
		}
	}
	return out
}

// copyUpdated queues the jobs a pull-secret copy stopped naming: a job
// waiting under the finalizer may be released. Jobs still named are not
// queued, so a copy shared by many jobs costs nothing as each starts.
func (c *Controller) copyUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Secret)
	cur, ok2 := newObj.(*corev1.Secret)
	if !ok1 || !ok2 || cur.Namespace != v1beta1.DaemonConfigNamespace || old.Namespace != cur.Namespace {
		return
	}
	after := pullsecrets.ReferencedJobs(cur)
	for _, key := range pullsecrets.ReferencedJobs(old) {
		if !slices.Contains(after, key) {
			c.jobQueue.Add(key)
		}
	}
}

// copyDeleted queues every job the deleted copy named.
func (c *Controller) copyDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Namespace != v1beta1.DaemonConfigNamespace {
		return
	}
	for _, key := range pullsecrets.ReferencedJobs(s) {
		c.jobQueue.Add(key)
	}
}
