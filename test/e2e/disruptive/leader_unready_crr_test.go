//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A CRR with unreadyGracePeriodSeconds holds its pod not-ready (KruisePodReady False). The
// leader is SIGKILLed while the CRR runs, and the CRR is deleted while no controller leads: no
// controller sees the deletion happen. The new leader must still set the pod ready again, from
// what the API holds (the pod's condition names a CRR that is gone), not from a remembered event.
func TestUnreadyCRRDeletedDuringLeaderFailover(t *testing.T) {
	ctx := framework.Context(t, 12*time.Minute)
	e := faultNewEnv(ctx, t, "hard-unready")
	pods := leaderWaitReplicasAvailable(ctx, t, e.f, 2*time.Minute)

	pod := resPreStopPod(e.f, e.ns, "web", 60, "main")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}
	before := e.f.CreateRunningPod(ctx, t, pod)
	hardWaitPodCondition(ctx, t, e.f, before, corev1.ConditionTrue, time.Minute, "the gate's condition set True")

	crr := resCRR(e.ns, "r", "web", 90, "main")
	crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](1)
	resCreateCRR(ctx, t, e.c, crr)
	// Held not-ready for this CRR, and the daemon in the (60 s) preStop hook.
	hardWaitPodCondition(ctx, t, e.f, before, corev1.ConditionFalse, time.Minute, "the pod held not-ready for CRR r")
	framework.WaitCRR(ctx, t, e.c, e.ns, "r", time.Minute, "CRR r recreating", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return resCRRState(c, "main").Phase == appsv1alpha1.ContainerRecreateRequestRecreating
	})

	lease := leaderGetLease(ctx, t, e.f)
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	leader := leaderPodOf(ctx, t, e.f, pods, holder)
	killedAt := time.Now()
	framework.KillContainer(ctx, t, &leader, leaderContainer)
	if err := e.c.AppsV1alpha1().ContainerRecreateRequests(e.ns).Delete(ctx, "r", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting CRR r: %v", err)
	}
	deletedAt := time.Now()
	t.Logf("killed leader %s (identity %s) and deleted CRR r %s later", leader.Name, holder, deletedAt.Sub(killedAt).Round(time.Millisecond))
	// While no replica leads, nothing releases the pod.
	if l := leaderGetLease(ctx, t, e.f); ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		t.Logf("note: the Lease changed hands within %s of the kill: %s", time.Since(killedAt).Round(time.Millisecond), leaderDescribeLease(l))
	}

	framework.WaitFor(ctx, t, leaderTakeoverTimeout, "another replica holds the Lease", func(ctx context.Context) (bool, string, error) {
		l, err := e.f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != holder, leaderDescribeLease(l), nil
	})
	released := hardWaitPodCondition(ctx, t, e.f, before, corev1.ConditionTrue, 2*time.Minute, "the pod ready again after the takeover")
	t.Logf("KruisePodReady True again %s after the CRR was deleted: %+v", time.Since(deletedAt).Round(time.Millisecond), released)
	if released.LastTransitionTime.Time.Before(deletedAt.Truncate(time.Second)) {
		t.Errorf("KruisePodReady turned True at %s, before the CRR was deleted (%s)", released.LastTransitionTime, deletedAt)
	}
	framework.WaitFor(ctx, t, time.Minute, "pod web Ready", func(ctx context.Context) (bool, string, error) {
		p, err := e.f.Client.CoreV1().Pods(e.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s (%s)", c.Status, c.Message), nil
			}
		}
		return false, "no Ready condition", nil
	})
}

// hardWaitPodCondition waits for the pod's KruisePodReady condition to have status.
func hardWaitPodCondition(ctx context.Context, t *testing.T, f *framework.Framework, pod *corev1.Pod, status corev1.ConditionStatus,
	timeout time.Duration, desc string) corev1.PodCondition {
	t.Helper()
	var got corev1.PodCondition
	framework.WaitFor(ctx, t, timeout, desc, func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == appsv1alpha1.KruisePodReadyConditionType {
				got = c
				return c.Status == status, fmt.Sprintf("KruisePodReady=%s reason %q message %q", c.Status, c.Reason, c.Message), nil
			}
		}
		return false, "no KruisePodReady condition", nil
	})
	return got
}
