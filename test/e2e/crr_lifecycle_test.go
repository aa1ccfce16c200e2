//go:build e2e

package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// activeDeadlineSeconds completes a CRR that cannot finish in time (the container's preStop hook
// sleeps far longer than the deadline), marks its containers Failed and takes it off the daemons'
// watch; the daemon cancels the hook and never stops the container.
func TestCRRActiveDeadline(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-deadline")
	pod := f.BusyboxPod(ns, "web", "main")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sleep", "60"}},
	}}
	before := f.CreateRunningPod(ctx, t, pod)

	const deadlineExceeded = `kruise_crr_completed_total{reason="DeadlineExceeded"}`
	counted, err := leaderSample(ctx, f, deadlineExceeded)
	if err != nil {
		t.Fatal(err)
	}

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](120)}
	created, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	got := framework.WaitCRR(ctx, t, kc, ns, "r", 10*time.Second, "CRR completed by its deadline", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		_, active := c.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]
		return completed(c) && !active
	})
	if want := "exceeded activeDeadlineSeconds (3s)"; got.Status.Message != want {
		t.Errorf("message %q, want %q", got.Status.Message, want)
	}
	requireLeaderCounted(ctx, t, f, deadlineExceeded, counted, 1)
	if took := got.Status.CompletionTime.Sub(created.CreationTimestamp.Time); took < 3*time.Second || took > 6*time.Second {
		t.Errorf("completed %s after creation, want about 3s", took)
	}
	if len(got.Status.ContainerRecreateStates) != 1 || got.Status.ContainerRecreateStates[0].Phase != appsv1alpha1.ContainerRecreateRequestFailed {
		t.Errorf("container states %+v, want main Failed", got.Status.ContainerRecreateStates)
	}
	after, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod: %v", err)
	}
	if b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]; a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount {
		t.Errorf("container was restarted although the CRR was cancelled: %s/%d -> %s/%d", b.ContainerID, b.RestartCount, a.ContainerID, a.RestartCount)
	}
}

// ttlSecondsAfterFinished deletes a completed CRR.
func TestCRRTTLAfterFinished(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-ttl")

	// A CRR for a pod that never starts completes at its deadline (3 s); the ttl then deletes it.
	pendingPod(ctx, t, f, ns, "pending")
	crr := endingCRR(ns, "r", "pending")
	crr.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	framework.WaitCRRGone(ctx, t, kc, ns, "r", 20*time.Second)
}

// Deleting the pod completes its CRR with "pod has gone".
func TestCRRPodDeleted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-podgone")
	// A slow preStop holds the CRR open, so the pod is deleted while the daemon is in the middle
	// of recreating its container.
	pod := f.BusyboxPod(ns, "web", "main")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "50"}}},
	}
	f.CreateRunningPod(ctx, t, pod)

	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crrFor(ns, "r", "web", "main"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	framework.WaitCRR(ctx, t, kc, ns, "r", 30*time.Second, "the daemon in the preStop hook", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		s := c.Status.ContainerRecreateStates
		return len(s) == 1 && s[0].Phase == appsv1alpha1.ContainerRecreateRequestRecreating
	})
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	got := framework.WaitCRR(ctx, t, kc, ns, "r", time.Minute, "CRR completed after its pod was deleted", completed)
	if got.Status.Message != "pod has gone" {
		t.Errorf("message %q, want %q", got.Status.Message, "pod has gone")
	}
	if s := got.Status.ContainerRecreateStates; len(s) != 1 || s[0].Phase != appsv1alpha1.ContainerRecreateRequestFailed {
		t.Errorf("container states %+v, want main Failed", s)
	}
}
