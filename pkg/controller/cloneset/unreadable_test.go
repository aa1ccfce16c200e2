package cloneset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// TestAPodWithAnUnreadableAnnotationDoesNotStallTheRollout: of three old pods, one carries an
// in-place update annotation that does not decode. The pass does not fail; another pod is
// updated in place, the bad one is left and named in a Warning Event.
func TestAPodWithAnUnreadableAnnotationDoesNotStallTheRollout(t *testing.T) {
	for _, tc := range []struct{ name, key, value string }{
		{name: "state", key: pub.InPlaceUpdateStateKey, value: "{not json"},
		{name: "grace", key: pub.InPlaceUpdateGraceKey, value: `{"revision": 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldRev := revisionOf(t, cloneSet(3, "app:1"), 1)
			cs := cloneSet(3, "app:2")
			a, b, bad := runningPod(t, cs, oldRev, "aaaaa"), runningPod(t, cs, oldRev, "bbbbb"), runningPod(t, cs, oldRev, "ccccc")
			bad.Annotations[tc.key] = tc.value
			f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, a, b, bad)
			_, ctx := ktesting.NewTestContext(t)
			if _, err := f.ctrl.sync(ctx, testNS+"/"+cs.Name); err != nil {
				t.Fatalf("the pass failed for one pod's annotation: %v", err)
			}
			var updated []string
			for _, act := range f.actions() {
				if u, ok := act.(k8stesting.UpdateAction); ok && act.GetResource().Resource == "pods" && act.GetSubresource() == "" {
					updated = append(updated, u.GetObject().(*corev1.Pod).Name)
				}
				if act.GetResource().Resource == "pods" && act.GetVerb() == "patch" && act.(k8stesting.PatchAction).GetName() == bad.Name {
					t.Errorf("the bad pod was written: %v", act)
				}
			}
			if len(updated) != 1 || updated[0] == bad.Name {
				t.Errorf("updated %v in place, want one of the other pods", updated)
			}
			var warned bool
			for len(f.recorder.Events) > 0 {
				ev := <-f.recorder.Events
				if strings.HasPrefix(ev, "Warning "+inplace.EventReasonUnreadableAnnotation) && strings.Contains(ev, bad.Name) && strings.Contains(ev, tc.key) {
					warned = true
				}
			}
			if !warned {
				t.Error("no Warning Event names the bad pod and its annotation")
			}
		})
	}
}

// TestAnUnreadablePodDoesNotHoldOthersRefresh: a pod whose update is done gets InPlaceUpdateReady
// even though another pod's state does not decode.
func TestAnUnreadablePodDoesNotHoldOthersRefresh(t *testing.T) {
	cs := cloneSet(2, "app:1")
	rev := revisionOf(t, cs, 1)
	done, bad := runningPod(t, cs, rev, "aaaaa"), runningPod(t, cs, rev, "bbbbb")
	done.Status.Conditions[1].Status = corev1.ConditionFalse
	done.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	bad.Annotations[pub.InPlaceUpdateStateKey] = "{not json"
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, done, bad)
	_, ctx := ktesting.NewTestContext(t)
	if _, err := f.ctrl.sync(ctx, testNS+"/"+cs.Name); err != nil {
		t.Fatalf("the pass failed for one pod's annotation: %v", err)
	}
	var marked bool
	for _, act := range f.actions() {
		if p, ok := act.(k8stesting.PatchAction); ok && act.GetSubresource() == "status" && p.GetName() == done.Name &&
			strings.Contains(string(p.GetPatch()), string(pub.InPlaceUpdateReady)) {
			marked = true
		}
		if p, ok := act.(k8stesting.PatchAction); ok && p.GetName() == bad.Name {
			t.Errorf("the bad pod was written: %v", act)
		}
	}
	if !marked {
		t.Errorf("pod %s was not marked InPlaceUpdateReady; writes: %v", done.Name, f.actions())
	}
}
