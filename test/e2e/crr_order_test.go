//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Two CRRs for one pod created in the same second run in creation order, not
// name order: the second starts only once the first has completed.
func TestCRRsOfOnePodRunInCreationOrder(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-order")
	f.RunningBusyboxPod(ctx, t, ns, "web", "main", "sidecar")

	w, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching CRRs: %v", err)
	}
	defer w.Stop()
	// "z-first" sorts after "a-second" by name; it is created first.
	for _, c := range []*appsv1alpha1.ContainerRecreateRequest{crrFor(ns, "z-first", "web", "main"), crrFor(ns, "a-second", "web", "sidecar")} {
		if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRR %s: %v", c.Name, err)
		}
	}
	firstDone := false
	var seen []string
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; seen %v", seen)
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			crr := ev.Object.(*appsv1alpha1.ContainerRecreateRequest)
			seen = append(seen, fmt.Sprintf("%s:%s", crr.Name, crr.Status.Phase))
			switch {
			case crr.Name == "z-first" && completed(crr):
				firstDone = true
			case crr.Name == "a-second" && crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestRecreating && !firstDone:
				t.Fatalf("a-second started before z-first completed (created first, in the same second); seen %v", seen)
			case crr.Name == "a-second" && completed(crr):
				if !firstDone {
					t.Fatalf("a-second completed first; seen %v", seen)
				}
				if crr.Status.Message != "recreated 1 container" {
					t.Fatalf("a-second: %q", crr.Status.Message)
				}
				return
			}
		case <-deadline:
			t.Fatalf("both CRRs did not complete in time; seen %v", seen)
		case <-ctx.Done():
			t.Fatalf("%v; seen %v", ctx.Err(), seen)
		}
	}
}

// Two CRRs for one pod, naming different containers, both complete: the older one first.
func TestCRRTwoRequestsForOnePod(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-two")
	f.RunningBusyboxPod(ctx, t, ns, "web", "main", "sidecar")

	// Creation times have a resolution of one second; names break ties, and a-first sorts first
	// either way.
	for _, crr := range []*appsv1alpha1.ContainerRecreateRequest{crrFor(ns, "a-first", "web", "sidecar"), crrFor(ns, "b-second", "web", "main")} {
		if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRR %s: %v", crr.Name, err)
		}
	}
	first := framework.WaitCRR(ctx, t, kc, ns, "a-first", crrTimeout, "CRR a-first completed", completed)
	second := framework.WaitCRR(ctx, t, kc, ns, "b-second", crrTimeout, "CRR b-second completed", completed)
	requireSucceeded(t, first, "sidecar")
	requireSucceeded(t, second, "main")
	if second.Status.CompletionTime.Before(first.Status.CompletionTime) {
		t.Errorf("b-second completed at %s, before a-first at %s", second.Status.CompletionTime, first.Status.CompletionTime)
	}
	pod := getPod(ctx, t, f, ns, "web")
	for _, c := range []string{"main", "sidecar"} {
		if rc := containerStatus(pod, c).RestartCount; rc != 1 {
			t.Errorf("%s restartCount %d, want 1", c, rc)
		}
	}
}

// orderedRecreate recreates two containers one after the other; both succeed.
func TestCRROrderedRecreate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-ordered")
	before := f.RunningBusyboxPod(ctx, t, ns, "web", "main", "sidecar")

	crr := crrFor(ns, "r", "web", "main", "sidecar")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true}
	got := runCRR(ctx, t, kc, crr)
	requireSucceeded(t, got, "main", "sidecar")
	after := getPod(ctx, t, f, ns, "web")
	for _, c := range []string{"main", "sidecar"} {
		b, a := containerStatus(before, c), containerStatus(after, c)
		if a.ContainerID == b.ContainerID {
			t.Errorf("%s: container ID unchanged", c)
		}
	}
	// The second container's kill starts only once the first runs again: its new instance
	// started no earlier than the first's.
	m, s := containerStatus(after, "main").State.Running, containerStatus(after, "sidecar").State.Running
	if m == nil || s == nil {
		t.Fatalf("containers not running after the CRR: main %+v sidecar %+v", m, s)
	}
	if s.StartedAt.Before(&m.StartedAt) {
		t.Errorf("sidecar restarted at %s, before main at %s", s.StartedAt, m.StartedAt)
	}
}
