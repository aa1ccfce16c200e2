package inplace

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// resizeOf is a spec giving app 2 cpu (requests) and 3 (limits).
func resizeOf() *Spec {
	return specWith(func(s *Spec) {
		s.ContainerResources["app"] = corev1.ResourceRequirements{Requests: res("2", ""), Limits: res("3", "")}
	})
}

func TestOperation(t *testing.T) {
	restartOnCPU := func(p *corev1.Pod) {
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	}
	metadataOnly := specWith(func(s *Spec) { s.Metadata = MetadataPatch{Labels: map[string]string{"tier": "front"}} })
	envFromLabel := specWith(func(s *Spec) {
		s.ContainerRefMetadata["log"] = metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}}
	})
	for name, tc := range map[string]struct {
		spec  *Spec
		pod   *corev1.Pod
		grace int32
		want  policyv1alpha1.PubOperation
	}{
		"an image":                                {spec: imagesOf("app"), pod: gated(), want: policyv1alpha1.PubUpdateOperation},
		"env from changed metadata":               {spec: envFromLabel, pod: gated(), want: policyv1alpha1.PubUpdateOperation},
		"cpu applied live":                        {spec: resizeOf(), pod: gated(), want: policyv1alpha1.PubResizeOperation},
		"cpu with resizePolicy RestartContainer":  {spec: resizeOf(), pod: gated(restartOnCPU), want: policyv1alpha1.PubUpdateOperation},
		"cpu and an image":                        {spec: twoBatchSpec(), pod: gated(), want: policyv1alpha1.PubUpdateOperation},
		"cpu after a grace period held not ready": {spec: resizeOf(), pod: gated(), grace: 5, want: policyv1alpha1.PubUpdateOperation},
		"cpu after a grace period, no gate":       {spec: resizeOf(), pod: runningPod(), grace: 5, want: policyv1alpha1.PubResizeOperation},
		"metadata only":                           {spec: metadataOnly, pod: gated(), want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.spec.Operation(tc.pod, tc.grace))
		})
	}
}

func budgetFixture(b budgetwait.Budget, inPlace bool) *fixture {
	f := newFixture(gated())
	f.updater.WithBudget(budgetwait.Check{Budget: b, InPlace: inPlace})
	return f
}

// A budget that refuses: nothing is written, not even the readiness gate, and the workload is
// told to look again shortly.
func TestUpdateWaitsForTheBudget(t *testing.T) {
	b := gen.RefusingBudget("PodUnavailableBudget ns/pub: no disruption allowed")
	f := budgetFixture(b, true)
	r := f.updater.Update(context.Background(), gated(), imagesOf("app"), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeBudgetWait, r.Outcome)
	assert.Equal(t, budgetwait.RetryAfter, r.RequeueAfter)
	assert.Equal(t, &budgetwait.Wait{Namespace: "ns", Pod: "web", Op: policyv1alpha1.PubUpdateOperation, Reason: b.Reason}, r.Budget)
	assert.Empty(t, f.writes())
	assert.Equal(t, []gen.BudgetCall{{Pod: "web", Op: policyv1alpha1.PubUpdateOperation}}, b.Calls())

	// A failure to decide is a wait too.
	f = budgetFixture(&gen.Budget{Err: errors.New("timeout")}, true)
	r = f.updater.Update(context.Background(), gated(), imagesOf("app"), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeBudgetWait, r.Outcome)
	assert.True(t, r.Budget.Failed)
	assert.Empty(t, f.writes())
}

// A budget that allows: the update goes on as without one; a live resize is asked as RESIZE.
func TestUpdateAllowedByTheBudget(t *testing.T) {
	b := gen.AllowingBudget()
	f := budgetFixture(b, true)
	r := f.updater.Update(context.Background(), gated(), resizeOf(), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeStarted, r.Outcome)
	assert.Equal(t, []string{"patch resize", "update "}, f.writes())
	assert.Equal(t, []gen.BudgetCall{{Pod: "web", Op: policyv1alpha1.PubResizeOperation}}, b.Calls())
}

// Gate PodUnavailableBudgetUpdateGate off: the budget is not asked.
func TestUpdateGateOffAsksNoBudget(t *testing.T) {
	b := gen.RefusingBudget("no")
	f := budgetFixture(b, false)
	r := f.updater.Update(context.Background(), gated(), imagesOf("app"), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeStarted, r.Outcome)
	assert.Empty(t, b.Calls())
}

// The pod webhook refusing the write for a budget is a wait, not a failure.
func TestUpdateRefusedByThePodWebhookWaits(t *testing.T) {
	f := newFixture(gated())
	f.failFirst("update", "", 1, gen.BudgetRefusal("PodUnavailableBudget ns/pub: no disruption allowed"))
	r := f.updater.Update(context.Background(), gated(), imagesOf("app"), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeBudgetWait, r.Outcome)
	assert.Equal(t, "PodUnavailableBudget ns/pub: no disruption allowed", r.Waiting)
	assert.NotNil(t, r.Pod, "the pod as marked not ready, for the workload's expectations")
}
