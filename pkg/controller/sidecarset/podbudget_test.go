package sidecarset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const budgetReason = "PodUnavailableBudget web/web: no disruption allowed (unavailableAllowed 0)"

func (f *fixture) syncAfter() int64 {
	f.t.Helper()
	after, err := f.ctrl.sync(testContext(f.t), f.ss.Name)
	require.NoError(f.t, err)
	return int64(after)
}

func budgetEvents(events []string) string {
	var out []string
	for _, e := range events {
		if strings.Contains(e, budgetwait.EventReason) {
			out = append(out, e)
		}
	}
	return strings.Join(out, "\n")
}

// A budget that refuses: the sidecars are not upgraded, the SidecarSet looks again within
// RetryAfter and says why once.
func TestUpgradeWaitsForTheBudget(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := newFixtureWith(t, budgetwait.Check{Budget: b, InPlace: true}, sidecarSetAt("2"), injectedPod(t, "p-0", sidecarSetAt("1")))
	for i := 0; i < 2; i++ {
		after := f.syncAfter()
		assert.True(t, after > 0 && after <= int64(budgetwait.RetryAfter), "pass %d looks again after %d", i, after)
	}
	assert.Empty(t, f.patchedPods())
	assert.Equal(t, []gen.BudgetCall{{Pod: "p-0", Op: policyv1alpha1.PubUpdateOperation}, {Pod: "p-0", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
	events := f.events()
	waits := budgetEvents(events)
	assert.Equal(t, 1, strings.Count(waits, budgetwait.EventReason), events)
	assert.Contains(t, waits, "pod p-0 waits (UPDATE): "+budgetReason)
	assert.Equal(t, int32(0), f.status().UpdatedPods)
}

func TestUpgradeAllowedByTheBudget(t *testing.T) {
	b := gen.AllowingBudget()
	f := newFixtureWith(t, budgetwait.Check{Budget: b, InPlace: true}, sidecarSetAt("2"), injectedPod(t, "p-0", sidecarSetAt("1")))
	require.NoError(t, f.sync())
	assert.Equal(t, []string{"p-0"}, f.patchedPods())
	assert.Equal(t, []gen.BudgetCall{{Pod: "p-0", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
}

func TestUpgradeGateOff(t *testing.T) {
	b := gen.RefusingBudget(budgetReason)
	f := newFixtureWith(t, budgetwait.Check{Budget: b}, sidecarSetAt("2"), injectedPod(t, "p-0", sidecarSetAt("1")))
	require.NoError(t, f.sync())
	assert.Equal(t, []string{"p-0"}, f.patchedPods())
	assert.Empty(t, b.Calls())
}

// The pod webhook refusing the upgrade for a budget: a wait, not a failure.
func TestUpgradeRefusedByThePodWebhookWaits(t *testing.T) {
	f := newFixture(t, sidecarSetAt("2"), injectedPod(t, "p-0", sidecarSetAt("1")))
	f.kube.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, gen.BudgetRefusal(budgetReason)
	})
	after := f.syncAfter()
	assert.True(t, after > 0 && after <= int64(budgetwait.RetryAfter), "looks again after %d", after)
	events := f.events()
	assert.Contains(t, budgetEvents(events), "pod p-0 waits (UPDATE): "+budgetReason)
	assert.NotContains(t, strings.Join(events, "\n"), "FailedUpdatePodInPlace")
}

// A hot upgrade's hand-over (the old copy to the empty image) asks the budget too.
func TestHotUpgradeFlipWaitsForTheBudget(t *testing.T) {
	v1, v2 := hotSetAt("1"), hotSetAt("2")
	p0 := gen.PodFrom(stepOne(t, v1, v2), running("envoy-2", "envoy:2"))
	b := gen.RefusingBudget(budgetReason)
	f := newFixtureWith(t, budgetwait.Check{Budget: b, InPlace: true}, hotSetAt("2"), p0)
	require.NoError(t, f.sync())
	assert.Empty(t, f.patchedPods())
	assert.Equal(t, []gen.BudgetCall{{Pod: "p-0", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())
	assert.Contains(t, budgetEvents(f.events()), "pod p-0 waits (UPDATE)")
}
