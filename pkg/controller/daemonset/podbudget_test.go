package daemonset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const budgetReason = "PodUnavailableBudget default/agent: no disruption allowed (unavailableAllowed 0)"

func inPlaceRolling(ds *appsv1beta1.DaemonSet) {
	ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType
}

// inPlaceRollout: the pod of node a at agent:1, the DaemonSet at agent:2 in place, consulting
// check.
func inPlaceRollout(t *testing.T, check budgetwait.Check) *fixture {
	old := daemonSet("agent:1", inPlaceRolling)
	oldRev := revisionOf(t, old, 1)
	ds := daemonSet("agent:2", inPlaceRolling)
	return newFixtureWith(t, fixtureExtras{budget: check}, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev},
		runningPod(t, old, oldRev, "a"))
}

func condition(st appsv1beta1.DaemonSetStatus, t appsv1.DaemonSetConditionType) *appsv1.DaemonSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestInPlaceUpdateWaitsForTheBudget(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := inPlaceRollout(t, budgetwait.Check{Budget: b, InPlace: true})
	for i := 0; i < 2; i++ {
		after := f.sync()
		assert.True(t, after > 0 && after <= budgetwait.RetryAfter, "pass %d looks again after %v", i, after)
	}
	assert.Empty(t, f.writes(), "a pod the budget holds is not touched")
	assert.Equal(t, []gen.BudgetCall{{Pod: "agent-a", Op: policyv1alpha1.PubUpdateOperation}, {Pod: "agent-a", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
	events := strings.Join(drain(f.recorder), "\n")
	assert.Equal(t, 1, strings.Count(events, budgetwait.EventReason), events)
	assert.Contains(t, events, "pod agent-a waits (UPDATE): "+budgetReason)
	assert.NotContains(t, events, ReasonFailedUpdateInPlace)
	c := condition(f.status(), appsv1beta1.DaemonSetPodUnavailableBudgetWait)
	if assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionTrue, c.Status)
		assert.Equal(t, budgetwait.ConditionReasonRefused, c.Reason)
		assert.Contains(t, c.Message, budgetReason)
	}
}

func TestInPlaceUpdateAllowedByTheBudget(t *testing.T) {
	b := gen.AllowingBudget()
	f := inPlaceRollout(t, budgetwait.Check{Budget: b, InPlace: true})
	f.sync()
	assert.Equal(t, []string{"patch/status agent-a", "update agent-a"}, f.writes())
	assert.Equal(t, []gen.BudgetCall{{Pod: "agent-a", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
	assert.Nil(t, condition(f.status(), appsv1beta1.DaemonSetPodUnavailableBudgetWait))
}

func TestInPlaceUpdateGateOff(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := inPlaceRollout(t, budgetwait.Check{Budget: b})
	f.sync()
	assert.Equal(t, []string{"patch/status agent-a", "update agent-a"}, f.writes())
	assert.Empty(t, b.Calls())
}

// A Standard rolling update's deletion the pod webhook refuses for a budget: a wait, not an
// error; the deletion is not awaited.
func TestDeletionRefusedByABudgetWaits(t *testing.T) {
	old := daemonSet("agent:1")
	oldRev := revisionOf(t, old, 1)
	ds := daemonSet("agent:2")
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, runningPod(t, old, oldRev, "a"))
	f.kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, gen.BudgetRefusal(budgetReason)
	})
	for i := 0; i < 2; i++ {
		after := f.sync()
		assert.True(t, after > 0 && after <= budgetwait.RetryAfter, "pass %d looks again after %v", i, after)
		assert.Empty(t, f.ctrl.expect.Pending(testNS+"/agent"), "pass %d", i)
	}
	events := strings.Join(drain(f.recorder), "\n")
	assert.Equal(t, 1, strings.Count(events, budgetwait.EventReason), events)
	assert.Contains(t, events, "pod agent-a waits (DELETE): "+budgetReason)
	assert.NotContains(t, events, ReasonFailedDelete)
	c := condition(f.status(), appsv1beta1.DaemonSetPodUnavailableBudgetWait)
	if assert.NotNil(t, c) {
		assert.Contains(t, c.Message, "(DELETE)")
	}
}
