package cloneset

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const budgetReason = "PodUnavailableBudget default/web: no disruption allowed (unavailableAllowed 0)"

// imageRollout: one pod at app:1, the CloneSet at app:2 in place, consulting budget.
func imageRollout(t *testing.T, check budgetwait.Check) *fixture {
	old := cloneSet(1, "app:1")
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(1, "app:2")
	return newFixtureWith(t, cs, []*appsv1.ControllerRevision{oldRev}, []*corev1.Pod{runningPod(t, cs, oldRev, "aaaaa")},
		fixtureExtras{budget: check})
}

// syncAfter runs one pass and returns when it asked to be looked at again.
func (f *fixture) syncAfter() time.Duration {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	after, err := f.ctrl.sync(ctx, testNS+"/"+f.cs.Name)
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	return after
}

func (f *fixture) budgetEvents() []string {
	var out []string
	for _, e := range gen.DrainEvents(f.recorder) {
		if strings.Contains(e, budgetwait.EventReason) {
			out = append(out, e)
		}
	}
	return out
}

// A budget that refuses: the pod is not touched, the CloneSet looks again within RetryAfter, and
// says why once (an Event and the condition), not on every retry.
func TestInPlaceUpdateWaitsForTheBudget(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := imageRollout(t, budgetwait.Check{Budget: b, InPlace: true})
	for i := 0; i < 2; i++ {
		after := f.syncAfter()
		if after <= 0 || after > budgetwait.RetryAfter {
			t.Errorf("pass %d: looks again after %v, want at most %v", i, after, budgetwait.RetryAfter)
		}
	}
	for _, act := range f.actions() {
		if act.GetResource().Resource == "pods" {
			t.Errorf("a pod the budget holds was written: %v", act)
		}
	}
	if events := f.budgetEvents(); len(events) != 1 || !strings.Contains(events[0], "pod web-aaaaa waits (UPDATE): "+budgetReason) {
		t.Errorf("events %q, want one naming the pod and the reason", events)
	}
	cond := f.condition(appsv1beta1.CloneSetConditionPodUnavailableBudgetWait)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != budgetwait.ConditionReasonRefused || !strings.Contains(cond.Message, budgetReason) {
		t.Errorf("condition %+v, want True, Refused, with the reason", cond)
	}
	if calls := b.Calls(); len(calls) != 2 || calls[0] != (gen.BudgetCall{Pod: "web-aaaaa", Op: policyv1alpha1.PubUpdateOperation}) {
		t.Errorf("budget asked %v, want UPDATE of web-aaaaa once a pass", calls)
	}
	if failed := f.condition(appsv1beta1.CloneSetConditionFailedUpdate); failed != nil {
		t.Errorf("a wait reported as a failure: %+v", failed)
	}

	// Allowed now: the pod is updated, and the condition goes once the pass finds no wait.
	b.Allow = func(string) bool { return true }
	f.kube.ClearActions()
	f.kruise.ClearActions()
	f.cs = f.status2CloneSet()
	f.syncAfter()
	if !f.updatedInPlace("web-aaaaa") {
		t.Errorf("the pod allowed was not updated: %v", f.actions())
	}
	if cond := f.condition(appsv1beta1.CloneSetConditionPodUnavailableBudgetWait); cond != nil {
		t.Errorf("condition %+v stays after the wait ended", cond)
	}
}

// status2CloneSet puts the CloneSet as written (with its status) into the informer, as the next
// pass would see it.
func (f *fixture) status2CloneSet() *appsv1beta1.CloneSet {
	f.t.Helper()
	cs := f.cs.DeepCopy()
	cs.Status = f.status()
	if err := f.ctrl.cloneSetIndex.Update(cs); err != nil {
		f.t.Fatal(err)
	}
	return cs
}

// updatedInPlace reports whether the pass updated pod (a pod update, not the status).
func (f *fixture) updatedInPlace(pod string) bool {
	for _, act := range f.actions() {
		if u, ok := act.(k8stesting.UpdateAction); ok && act.GetResource().Resource == "pods" && act.GetSubresource() == "" {
			if u.GetObject().(*corev1.Pod).Name == pod {
				return true
			}
		}
	}
	return false
}

func TestInPlaceUpdateAllowedByTheBudget(t *testing.T) {
	b := gen.AllowingBudget()
	f := imageRollout(t, budgetwait.Check{Budget: b, InPlace: true})
	f.syncAfter()
	if !f.updatedInPlace("web-aaaaa") {
		t.Errorf("not updated: %v", f.actions())
	}
	if calls := b.Calls(); len(calls) != 1 || calls[0].Op != policyv1alpha1.PubUpdateOperation || calls[0].DryRun {
		t.Errorf("budget asked %v, want one UPDATE, not a dry run", calls)
	}
	if events := f.budgetEvents(); len(events) != 0 {
		t.Errorf("events %q for no wait", events)
	}
}

// A cpu change applied live is asked as RESIZE.
func TestResizeAskedAsResize(t *testing.T) {
	b := gen.AllowingBudget()
	old := cloneSet(1, "app:1", withCPU("100m"))
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(1, "app:1", withCPU("200m"))
	f := newFixtureWith(t, cs, []*appsv1.ControllerRevision{oldRev}, []*corev1.Pod{runningPod(t, cs, oldRev, "aaaaa")},
		fixtureExtras{resize: resizeSupport(true), budget: budgetwait.Check{Budget: b, InPlace: true}})
	f.syncAfter()
	if calls := b.Calls(); len(calls) != 1 || calls[0].Op != policyv1alpha1.PubResizeOperation {
		t.Errorf("budget asked %v, want RESIZE", calls)
	}
	if resized, _, _ := f.podWrites(); resized != 1 {
		t.Errorf("not resized: %v", f.actions())
	}
}

// Gate PodUnavailableBudgetUpdateGate off: no budget is asked, the update goes on.
func TestInPlaceUpdateGateOff(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := imageRollout(t, budgetwait.Check{Budget: b})
	f.syncAfter()
	if len(b.Calls()) != 0 {
		t.Errorf("budget asked %v with the gate off", b.Calls())
	}
	if !f.updatedInPlace("web-aaaaa") {
		t.Errorf("not updated: %v", f.actions())
	}
}

// A scale-in the pod webhook refuses for a budget: no error (no backoff), the expectation of the
// deletion dropped, the CloneSet looks again within RetryAfter and says why once.
func TestDeletionRefusedByABudgetWaits(t *testing.T) {
	cs := cloneSet(1, "app:1")
	rev := revisionOf(t, cs, 1)
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, runningPod(t, cs, rev, "aaaaa"), runningPod(t, cs, rev, "bbbbb"))
	f.kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, gen.BudgetRefusal(budgetReason)
	})
	for i := 0; i < 2; i++ {
		if after := f.syncAfter(); after <= 0 || after > budgetwait.RetryAfter {
			t.Errorf("pass %d: looks again after %v, want at most %v", i, after, budgetwait.RetryAfter)
		}
		if pending := f.ctrl.expect.Pending(testNS + "/web"); len(pending) != 0 {
			t.Errorf("pass %d: still expects %v", i, pending)
		}
	}
	events := gen.DrainEvents(f.recorder)
	var waits int
	for _, e := range events {
		if strings.Contains(e, budgetwait.EventReason) {
			waits++
			if !strings.Contains(e, "(DELETE): "+budgetReason) {
				t.Errorf("event %q, want the deletion and the reason", e)
			}
		}
		if strings.Contains(e, ReasonFailedDelete) {
			t.Errorf("a wait reported as a failed deletion: %q", e)
		}
	}
	if waits != 1 {
		t.Errorf("%d wait events over two passes, want 1: %q", waits, events)
	}
	if cond := f.condition(appsv1beta1.CloneSetConditionPodUnavailableBudgetWait); cond == nil || !strings.Contains(cond.Message, "(DELETE)") {
		t.Errorf("condition %+v, want the deletion's wait", cond)
	}
	if cond := f.condition(appsv1beta1.CloneSetConditionFailedScale); cond != nil {
		t.Errorf("a wait reported as FailedScale: %+v", cond)
	}
}
