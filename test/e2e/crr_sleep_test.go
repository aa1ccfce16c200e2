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

// A sleep preStop hook (which the CRR's OpenKruise-compatible preStop type cannot hold) runs
// from the pod's own spec before the stop: the old instance ends no sooner than the sleep.
func TestCRRPreStopSleep(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-sleep")

	const sleepSeconds = 4
	pod := f.BusyboxPod(ns, "web", "main")
	// The API server requires a sleep hook shorter than the pod's grace period.
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: sleepSeconds}},
	}
	pod = f.CreateRunningPod(ctx, t, pod)

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](30)}
	created, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	got := framework.WaitCRR(ctx, t, kc, ns, "r", 90*time.Second, "CRR completed", completed)
	if s := got.Status.ContainerRecreateStates; len(s) != 1 || s[0].Phase != appsv1alpha1.ContainerRecreateRequestSucceeded {
		t.Fatalf("container states %+v, want main Succeeded", s)
	}

	cur, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := cur.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if old == nil {
		t.Fatalf("no terminated previous instance in %+v", cur.Status.ContainerStatuses[0])
	}
	// Timestamps have whole-second resolution: allow one second of rounding.
	if ran := old.FinishedAt.Sub(created.CreationTimestamp.Time); ran < (sleepSeconds-1)*time.Second {
		t.Fatalf("the old instance finished %v after the CRR was created: the %ds sleep hook did not run first", ran, sleepSeconds)
	}
	if cur.Status.ContainerStatuses[0].ContainerID == pod.Status.ContainerStatuses[0].ContainerID {
		t.Fatal("the container was not recreated")
	}
}
