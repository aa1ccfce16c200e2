//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

func kruisePodReadyStatus(pod *corev1.Pod) corev1.ConditionStatus {
	if c := readinessgate.Condition(pod); c != nil {
		return c.Status
	}
	return ""
}

func waitPodReady(ctx context.Context, t *testing.T, f *framework.Framework, ns, name, desc string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(ctx, t, time.Minute, desc, func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = p
		return framework.PodReady(p), fmt.Sprintf("ready=%t %s=%q", framework.PodReady(p), appsv1alpha1.KruisePodReadyConditionType, kruisePodReadyStatus(p)), nil
	})
	return got
}

// A pod with the KruisePodReady readiness gate is made NotReady before its container is stopped,
// and Ready again after the CRR completes.
func TestCRRUnreadyGraceWithReadinessGate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-unready")
	pod := f.BusyboxPod(ns, "web", "main")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}
	created := f.CreateRunningPod(ctx, t, pod)

	// Such a pod is not Ready until the gate's condition is True: kruise-controller sets it on
	// pods that declare the gate (pkg/controller/podreadiness), as OpenKruise does.
	before := waitPodReady(ctx, t, f, ns, "web", "pod web Ready with the gate True")
	if c := readinessgate.Condition(before); c == nil || c.Reason != "GateDeclared" {
		t.Errorf("%s should have been set by kruise-controller (reason GateDeclared): %+v", appsv1alpha1.KruisePodReadyConditionType, c)
	}
	oldID := containerStatus(created, "main").ContainerID

	w, err := f.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "web").String(), ResourceVersion: before.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watching pod: %v", err)
	}
	defer w.Stop()

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](2)}
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}

	// Every pod update in order: NotReady must show while the old container still runs.
	unreadyWithOldID, holderMessage := false, ""
	wctx, cancel := context.WithTimeout(ctx, crrTimeout)
	defer cancel()
watchLoop:
	for {
		select {
		case <-wctx.Done():
			t.Fatalf("pod web: no new container for main within %s (NotReady seen with the old one: %t)", crrTimeout, unreadyWithOldID)
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("pod watch closed")
			}
			if ev.Type != watch.Modified {
				continue
			}
			p := ev.Object.(*corev1.Pod)
			id := containerStatus(p, "main").ContainerID
			if id == oldID && !framework.PodReady(p) {
				unreadyWithOldID = true
				// OpenKruise's JSON list of holders, so other holders can
				// add and remove themselves.
				if c := readinessgate.Condition(p); c != nil && c.Status == corev1.ConditionFalse {
					holderMessage = c.Message
				}
			}
			if id != oldID && id != "" {
				break watchLoop
			}
		}
	}
	if !unreadyWithOldID {
		t.Errorf("the pod never became NotReady before container main was replaced")
	}
	if want := `[{"userAgent":"ContainerRecreateRequest","key":"` + ns + `/r"}]`; holderMessage != want {
		t.Errorf("%s message while NotReady = %q, want %q", appsv1alpha1.KruisePodReadyConditionType, holderMessage, want)
	}

	got := framework.WaitCRR(ctx, t, kc, ns, "r", crrTimeout, "CRR r completed", completed)
	requireSucceeded(t, got, "main")
	if got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] == "" {
		t.Errorf("annotation %s missing", appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
	}
	// What a v1beta1 client of OpenKruise's looks for instead.
	beta, err := kc.AppsV1beta1().ContainerRecreateRequests(ns).Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the CRR as v1beta1: %v", err)
	}
	if !meta.IsStatusConditionTrue(beta.Status.Conditions, "PreRecreateGrace") {
		t.Errorf("v1beta1 status has no PreRecreateGrace=True condition: %+v", beta.Status.Conditions)
	}
	after := waitPodReady(ctx, t, f, ns, "web", "pod web Ready again after the CRR")
	if s := kruisePodReadyStatus(after); s != corev1.ConditionTrue {
		t.Errorf("%s = %q after the CRR, want True", appsv1alpha1.KruisePodReadyConditionType, s)
	}
	if a := containerStatus(after, "main"); a.ContainerID == oldID {
		t.Errorf("container main was not recreated")
	}
}

// A pod without the gate cannot be made NotReady: the CRR goes ahead at once and says so in an Event.
func TestCRRUnreadyGraceWithoutGate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-nogate")
	f.RunningBusyboxPod(ctx, t, ns, "web", "main")

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](5)}
	got := runCRR(ctx, t, kc, crr)
	requireSucceeded(t, got, "main")
	if _, ok := got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; ok {
		t.Errorf("annotation %s set for a pod without the gate", appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
	}

	framework.WaitFor(ctx, t, 30*time.Second, "Event UnreadyGateMissing on CRR r", func(ctx context.Context) (bool, string, error) {
		evs, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "ContainerRecreateRequest", "involvedObject.name": "r", "reason": "UnreadyGateMissing",
		}.AsSelector().String()})
		if err != nil {
			return false, "", err
		}
		return len(evs.Items) > 0, fmt.Sprintf("%d events", len(evs.Items)), nil
	})
	p := getPod(ctx, t, f, ns, "web")
	if s := kruisePodReadyStatus(p); s != "" {
		t.Errorf("pod without the gate got condition %s=%q", appsv1alpha1.KruisePodReadyConditionType, s)
	}
}
