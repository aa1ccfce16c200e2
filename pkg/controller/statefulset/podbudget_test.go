package statefulset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const budgetReason = "PodUnavailableBudget default/web: no disruption allowed (unavailableAllowed 0)"

// inPlaceRollout: one pod at app:1, the set at app:2 in place, consulting check.
func inPlaceRollout(t *testing.T, check budgetwait.Check) *fixture {
	old := statefulSet(1, "app:1", inPlace)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(1, "app:2", inPlace)
	return newFixtureWith(t, fixtureExtras{budget: check}, set, oldRev, runningPod(t, set, oldRev, 0))
}

func (f *fixture) syncAfter() int64 {
	f.t.Helper()
	after, err := f.ctrl.sync(testContext(f.t), testNS+"/"+f.set.Name)
	require.NoError(f.t, err)
	return int64(after)
}

func TestInPlaceUpdateWaitsForTheBudget(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := inPlaceRollout(t, budgetwait.Check{Budget: b, InPlace: true})
	for i := 0; i < 2; i++ {
		after := f.syncAfter()
		assert.True(t, after > 0 && after <= int64(budgetwait.RetryAfter), "pass %d looks again after %d", i, after)
	}
	assert.Empty(t, f.writes(), "a pod the budget holds is not touched")
	assert.Equal(t, []gen.BudgetCall{{Pod: "web-0", Op: policyv1alpha1.PubUpdateOperation}, {Pod: "web-0", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
	events := f.events()
	assert.Equal(t, 1, strings.Count(events, budgetwait.EventReason), events)
	assert.Contains(t, events, "pod web-0 waits (UPDATE): "+budgetReason)
	assert.NotContains(t, events, ReasonFailedUpdateInPlace)
	c := condition(f.status(), appsv1beta1.PodUnavailableBudgetWait)
	if assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionTrue, c.Status)
		assert.Equal(t, budgetwait.ConditionReasonRefused, c.Reason)
		assert.Contains(t, c.Message, budgetReason)
	}
	assert.Nil(t, condition(f.status(), appsv1beta1.FailedUpdatePod))
}

func TestInPlaceUpdateAllowedByTheBudget(t *testing.T) {
	b := gen.AllowingBudget()
	f := inPlaceRollout(t, budgetwait.Check{Budget: b, InPlace: true})
	f.sync()
	assert.Contains(t, f.writes(), "update pods web-0")
	assert.Equal(t, []gen.BudgetCall{{Pod: "web-0", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
}

// A cpu change applied live is asked as RESIZE.
func TestResizeAskedAsResize(t *testing.T) {
	b := gen.AllowingBudget()
	old := statefulSet(1, "app:1", inPlace, withCPU("100m"))
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(1, "app:1", inPlace, withCPU("200m"))
	f := newFixtureWith(t, fixtureExtras{budget: budgetwait.Check{Budget: b, InPlace: true}, resize: resizeSupport(true)},
		set, oldRev, runningPod(t, set, oldRev, 0))
	f.sync()
	assert.Contains(t, f.writes(), "patch pods/resize web-0")
	assert.Equal(t, []gen.BudgetCall{{Pod: "web-0", Op: policyv1alpha1.PubResizeOperation}}, b.Calls())
}

func TestInPlaceUpdateGateOff(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := inPlaceRollout(t, budgetwait.Check{Budget: b})
	f.sync()
	assert.Contains(t, f.writes(), "update pods web-0")
	assert.Empty(t, b.Calls())
}

// A recreate update the pod webhook refuses for a budget: a wait, not an error; the deletion is
// not awaited; no "recreated" Event.
func TestRecreateRefusedByABudgetWaits(t *testing.T) {
	old := statefulSet(2, "app:1")
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(2, "app:2")
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1))
	f.kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, gen.BudgetRefusal(budgetReason)
	})
	for i := 0; i < 2; i++ {
		after := f.syncAfter()
		assert.True(t, after > 0 && after <= int64(budgetwait.RetryAfter), "pass %d looks again after %d", i, after)
		assert.Empty(t, f.ctrl.expect.Pending(testNS+"/web"), "pass %d", i)
	}
	events := f.events()
	assert.Equal(t, 1, strings.Count(events, budgetwait.EventReason), events)
	assert.Contains(t, events, "pod web-1 waits (DELETE): "+budgetReason)
	assert.NotContains(t, events, ReasonFailedDelete)
	assert.NotContains(t, events, ReasonSuccessfulUpdate)
	c := condition(f.status(), appsv1beta1.PodUnavailableBudgetWait)
	if assert.NotNil(t, c) {
		assert.Contains(t, c.Message, "(DELETE)")
	}
}
