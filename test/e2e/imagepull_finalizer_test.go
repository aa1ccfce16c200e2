//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// jobVersions records, from a watch started before the job exists, every version of one
// ImagePullJob the API server sends, until it is deleted.
type jobVersions struct {
	ch   <-chan watch.Event
	seen []string
}

func watchJob(ctx context.Context, t *testing.T, e *pullEnv, name string) *jobVersions {
	t.Helper()
	w, err := e.c.AppsV1beta1().ImagePullJobs(e.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		t.Fatalf("watching ImagePullJob %s/%s: %v", e.ns, name, err)
	}
	t.Cleanup(w.Stop)
	return &jobVersions{ch: w.ResultChan()}
}

// until reads events until cond holds for one (true), or the timeout passes (false).
func (v *jobVersions) until(timeout time.Duration, cond func(watch.EventType, *appsv1beta1.ImagePullJob) bool) bool {
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-v.ch:
			if !ok {
				return false
			}
			job, ok := ev.Object.(*appsv1beta1.ImagePullJob)
			if !ok {
				continue
			}
			v.seen = append(v.seen, fmt.Sprintf("%s finalizers=%v deleting=%t completed=%t succeeded=%d",
				ev.Type, job.Finalizers, job.DeletionTimestamp != nil, job.Status.CompletionTime != nil, job.Status.Succeeded))
			if cond(ev.Type, job) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func (v *jobVersions) String() string { return strings.Join(v.seen, "; ") }

func protected(job *appsv1beta1.ImagePullJob) bool {
	return slices.Contains(job.Finalizers, appsv1beta1.ProtectionFinalizer)
}

// copyNames reports whether the pull-secret copy exists and names the job.
func copyNames(ctx context.Context, e *pullEnv, copyName, job string) (exists, names bool, err error) {
	s, err := e.f.Client.CoreV1().Secrets(framework.DaemonConfigNamespace).Get(ctx, copyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, slices.Contains(pullsecrets.ReferencedJobs(s), e.ns+"/"+job), nil
}

// A job naming a pull secret carries OpenKruise's protection finalizer while it runs. Deleted
// while running (a Never job), the API server keeps it, Terminating, until its copy in
// kruise-daemon-config is gone; only then does it go. Completed, it keeps no copy and loses the
// finalizer, but stays.
func TestImagePullJobProtectionFinalizer(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 5*time.Minute)
	e := newPullEnv(t, ctx, "pull-finalizer")
	creds := framework.BasicCredentials()
	image := e.freshImage(ctx, t, "basic/", &creds)
	const secret = "regcred"
	e.f.CreatePullSecret(ctx, t, e.ns, secret, creds)
	copyName := pullsecrets.CopyName(e.ns, secret)

	t.Run("deleted while running", func(t *testing.T) {
		job := framework.NewImagePullJob(e.ns, "never", image)
		job.Spec.PullSecrets = []string{secret}
		job.Spec.CompletionPolicy = appsv1beta1.CompletionPolicy{Type: appsv1beta1.Never}
		v := watchJob(ctx, t, e, job.Name)
		framework.CreateImagePullJob(ctx, t, e.c, job)
		if !v.until(pullJobTimeout, func(_ watch.EventType, j *appsv1beta1.ImagePullJob) bool {
			return protected(j) && j.Status.Succeeded == 1
		}) {
			t.Fatalf("the Never job never pulled with the finalizer on; seen: %s", v)
		}
		if exists, names, err := copyNames(ctx, e, copyName, job.Name); err != nil || !exists || !names {
			t.Fatalf("copy %s/%s should exist and name the running job: exists=%t names=%t err=%v",
				framework.DaemonConfigNamespace, copyName, exists, names, err)
		}

		if err := e.c.AppsV1beta1().ImagePullJobs(e.ns).Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Without a finalizer the API server removes the job at once: no version with a
		// deletionTimestamp is ever sent.
		if !v.until(time.Minute, func(typ watch.EventType, j *appsv1beta1.ImagePullJob) bool {
			return typ == watch.Modified && j.DeletionTimestamp != nil && protected(j)
		}) {
			t.Fatalf("the deleted job was not held by %s; seen: %s", appsv1beta1.ProtectionFinalizer, v)
		}
		if !v.until(time.Minute, func(typ watch.EventType, _ *appsv1beta1.ImagePullJob) bool { return typ == watch.Deleted }) {
			exists, names, err := copyNames(ctx, e, copyName, job.Name)
			t.Fatalf("the deleted job never went (copy exists=%t names the job=%t err=%v); seen: %s; %s",
				exists, names, err, v, framework.DescribeImagePullJob(ctx, e.c, job))
		}
		// The finalizer went only once the copy no longer named the job (the copy is gone: no
		// other job names the secret).
		if exists, names, err := copyNames(ctx, e, copyName, job.Name); err != nil || exists || names {
			t.Errorf("copy %s/%s should be gone before the job: exists=%t names=%t err=%v",
				framework.DaemonConfigNamespace, copyName, exists, names, err)
		}
	})

	t.Run("completed", func(t *testing.T) {
		job := framework.NewImagePullJob(e.ns, "always", image)
		job.Spec.PullSecrets = []string{secret}
		v := watchJob(ctx, t, e, job.Name)
		framework.CreateImagePullJob(ctx, t, e.c, job)
		if !v.until(pullJobTimeout, func(_ watch.EventType, j *appsv1beta1.ImagePullJob) bool { return protected(j) }) {
			t.Fatalf("the running job never carried the finalizer; seen: %s", v)
		}
		if !v.until(pullJobTimeout, func(_ watch.EventType, j *appsv1beta1.ImagePullJob) bool {
			return j.Status.CompletionTime != nil && !protected(j)
		}) {
			t.Fatalf("the completed job kept the finalizer; seen: %s", v)
		}
		if exists, names, err := copyNames(ctx, e, copyName, job.Name); err != nil || exists || names {
			t.Errorf("copy %s/%s should be gone once the job completed (as OpenKruise does): exists=%t names=%t err=%v",
				framework.DaemonConfigNamespace, copyName, exists, names, err)
		}
		got, err := e.c.AppsV1beta1().ImagePullJobs(e.ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil || got.Status.Succeeded != 1 {
			t.Fatalf("the completed job should stay, succeeded: %v %+v", err, got)
		}
	})
}
