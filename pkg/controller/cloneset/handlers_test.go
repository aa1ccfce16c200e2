package cloneset

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/workload/expectations"
)

// A deletion the controller asked for is done for the diff once the pod shows a deletion
// timestamp (as for a ReplicaSet): its replacement does not wait out the grace period.
func TestDeleteObservedWhenPodTerminates(t *testing.T) {
	cs := cloneSet(2, "app:1")
	rev := revisionOf(t, cs, 1)
	pod := runningPod(t, cs, rev, "aaaaa")
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, pod)
	key, ok := f.ctrl.podEvents.OwnerKey(pod)
	if !ok {
		t.Fatalf("pod %s has no CloneSet key", pod.Name)
	}
	ctx := context.Background()
	f.ctrl.expect.Expect(key, expectations.Delete, expectations.Pods, pod.Name)

	relabelled := pod.DeepCopy()
	relabelled.ResourceVersion = "2"
	relabelled.Labels["other"] = "x"
	f.ctrl.podEvents.Handler().OnUpdate(pod, relabelled)
	if ok, _ := f.ctrl.expect.Satisfied(ctx, key); ok {
		t.Fatalf("an update without a deletion timestamp satisfied the delete expectation")
	}

	terminating := relabelled.DeepCopy()
	terminating.ResourceVersion = "3"
	now := metav1.NewTime(t0)
	terminating.DeletionTimestamp = &now
	f.ctrl.podEvents.Handler().OnUpdate(relabelled, terminating)
	if ok, _ := f.ctrl.expect.Satisfied(ctx, key); !ok {
		t.Errorf("the pod's deletion timestamp did not satisfy the delete expectation: %v", f.ctrl.expect.Pending(key))
	}
}
