//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// preDownloadTemplate is the pod template of the pre-download tests' workloads: busybox looping,
// labelled app=name, quick to stop.
func preDownloadTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "main", Image: image,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
			}},
		},
	}
}

// objectClient is what preDownloadRetryUpdate needs of a typed client of T.
type objectClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// preDownloadRetryUpdate reads object name with client, changes it with mutate and writes it
// back, again on a conflict, and returns what was written.
func preDownloadRetryUpdate[T any](ctx context.Context, t *testing.T, client objectClient[T], name string, mutate func(T)) T {
	t.Helper()
	var out T
	framework.WaitFor(ctx, t, time.Minute, "updating "+name, func(ctx context.Context) (bool, string, error) {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		mutate(obj)
		out, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, "conflict", nil
		}
		return err == nil, "updated", err
	})
	return out
}

// preDownloadWaitJob waits for the pre-download ImagePullJob jobName of workload kind/name and
// checks it: it pulls image, kind/name (uid) controls it, and it selects the workload's pods
// (app=name) whose controller-revision-hash is not notIn.
func preDownloadWaitJob(ctx context.Context, t *testing.T, e *faultEnv, kind, name string, uid types.UID, jobName, image, notIn string) *appsv1beta1.ImagePullJob {
	t.Helper()
	var job *appsv1beta1.ImagePullJob
	framework.WaitFor(ctx, t, preDownloadTimeout, "ImagePullJob "+jobName, func(ctx context.Context) (bool, string, error) {
		var err error
		job, err = e.c.AppsV1beta1().ImagePullJobs(e.ns).Get(ctx, jobName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			events, _ := e.f.ObjectEvents(ctx, e.ns, kind, name)
			return false, fmt.Sprintf("no job yet; %s events %d", kind, len(events)), nil
		}
		return err == nil, "found", err
	})
	if job.Spec.Image != image {
		t.Errorf("job image %s, want %s", job.Spec.Image, image)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != kind || ref.UID != uid {
		t.Errorf("job controller %+v, want %s %s (%s)", ref, kind, name, uid)
	}
	sel := job.Spec.PodSelector
	if sel == nil || sel.MatchLabels["app"] != name || len(sel.MatchExpressions) != 1 ||
		sel.MatchExpressions[0].Key != appsv1.ControllerRevisionHashLabelKey || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn ||
		!slices.Contains(sel.MatchExpressions[0].Values, notIn) {
		t.Errorf("job pod selector %+v: want app=%s and %s NotIn [... %s ...]", sel, name, appsv1.ControllerRevisionHashLabelKey, notIn)
	}
	return job
}

// preDownloadWaitJobGone waits until ImagePullJob jobName is deleted.
func preDownloadWaitJobGone(ctx context.Context, t *testing.T, e *faultEnv, jobName string) {
	t.Helper()
	framework.WaitFor(ctx, t, preDownloadTimeout, "ImagePullJob "+jobName+" deleted once the update is done", func(ctx context.Context) (bool, string, error) {
		_, err := e.c.AppsV1beta1().ImagePullJobs(e.ns).Get(ctx, jobName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		return false, "still there", err
	})
}
