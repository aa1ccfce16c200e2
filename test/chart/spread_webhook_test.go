package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/nodekruise/kruise/pkg/controller/spreadscope"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/spreadinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const spreadWebhook = "vworkloadspread.kb.io"

// isSpreadWebhook: the WorkloadSpread entries of the validating configuration.
func isSpreadWebhook(w admissionregistrationv1.ValidatingWebhook) bool {
	return w.Name == spreadscope.DeleteWebhook || w.Name == spreadscope.EvictionWebhook || w.Name == spreadWebhook
}

// checkSpreadConditions: the pod entries are never sent kube-system's or kruise's pods (nor a
// pod already being deleted) and nothing until kruise-controller writes the spreads' condition;
// the spread's entry skips kruise-controller's own writes.
func checkSpreadConditions(t *testing.T, w admissionregistrationv1.ValidatingWebhook, ns string) {
	t.Helper()
	none := admissionregistrationv1.MatchCondition{Name: spreadscope.ConditionName, Expression: spreadscope.NoneExpression}
	switch w.Name {
	case spreadscope.DeleteWebhook:
		assert.Equal(t, []admissionregistrationv1.MatchCondition{podscope.Condition(ns),
			{Name: "not-terminating", Expression: "oldObject == null || !has(oldObject.metadata.deletionTimestamp)"}, none}, w.MatchConditions, w.Name)
		assert.Equal(t, podscope.NamespaceSelector(ns), w.NamespaceSelector, w.Name)
	case spreadscope.EvictionWebhook:
		assert.Equal(t, []admissionregistrationv1.MatchCondition{podscope.Condition(ns), none}, w.MatchConditions, w.Name)
		assert.Equal(t, podscope.NamespaceSelector(ns), w.NamespaceSelector, w.Name)
	default:
		assert.Equal(t, validate.ControllerMatchConditions(ns), w.MatchConditions, w.Name)
	}
}

func spreadWebhooks(t *testing.T, objs rendered) map[string]admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	out := map[string]admissionregistrationv1.ValidatingWebhook{}
	for _, w := range objs.validating(t).Webhooks {
		if isSpreadWebhook(w) {
			out[w.Name] = w
		}
	}
	return out
}

// By default (gate WorkloadSpread on): the pod create entry first in the mutating configuration
// (as OpenKruise's pod handler runs it first), failurePolicy Fail; the delete and eviction
// accounting Ignore; the spreads' own validation; all NoneOnDryRun (they write statuses or the
// routing); the deletion protection entry still last.
func TestRenderSpreadWebhooksByDefault(t *testing.T) {
	objs := render(t)
	m := objs.mutatingWithSpread(t)
	create := m.Webhooks[0]
	assert.Equal(t, spreadscope.CreateWebhook, create.Name)
	assert.Equal(t, spreadinjection.Path, *create.ClientConfig.Service.Path)
	assert.Equal(t, certs.ServiceName, create.ClientConfig.Service.Name)
	assert.Equal(t, admissionregistrationv1.Fail, *create.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, *create.SideEffects)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsCreate, "", "v1", "pods")}, create.Rules)
	assert.Equal(t, podscope.NamespaceSelector("kruise-system"), create.NamespaceSelector)
	assert.Equal(t, []admissionregistrationv1.MatchCondition{podscope.Condition("kruise-system"),
		{Name: spreadscope.ConditionName, Expression: spreadscope.NoneExpression}}, create.MatchConditions,
		"never called until kruise-controller writes the spreads' condition")

	hooks := spreadWebhooks(t, objs)
	require.Len(t, hooks, 3)
	for name, w := range hooks {
		assert.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, *w.SideEffects, name)
		assert.EqualValues(t, 5, *w.TimeoutSeconds, name)
		checkSpreadConditions(t, w, "kruise-system")
	}
	del, evict, ws := hooks[spreadscope.DeleteWebhook], hooks[spreadscope.EvictionWebhook], hooks[spreadWebhook]
	assert.Equal(t, admissionregistrationv1.Ignore, *del.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Ignore, *evict.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Fail, *ws.FailurePolicy)
	assert.Equal(t, spreadinjection.DeletePath, *del.ClientConfig.Service.Path)
	assert.Equal(t, spreadinjection.DeletePath, *evict.ClientConfig.Service.Path)
	assert.Equal(t, validate.WorkloadSpreadPath, *ws.ClientConfig.Service.Path)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsDelete, "", "v1", "pods")}, del.Rules)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsCreate, "", "v1", "pods/eviction")}, evict.Rules)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule([]admissionregistrationv1.OperationType{
		admissionregistrationv1.Create, admissionregistrationv1.Update}, "apps.kruise.io", "v1alpha1", "workloadspreads")}, ws.Rules)

	rules := objs.clusterRoleRules(t)
	for _, resource := range []string{"workloadspreads", "workloadspreads/status", "jobs"} {
		assert.NotNil(t, ruleFor(rules, resource), resource)
	}

	withProtection := render(t, "--set", "featureGates=ResourcesDeletionProtection=true")
	v := withProtection.validating(t).Webhooks
	assert.Equal(t, "vdeletionprotection.kb.io", v[len(v)-1].Name, "the local overlay appends to the base's list")
}

// Gate WorkloadSpread off: no pod entry (no pod is ever sent); the spreads' validation stays, to
// refuse them as OpenKruise does. failurePolicy.workloadSpread sets the create and validation
// entries, never the accounting.
func TestRenderSpreadWebhooksFollowTheGateAndPolicy(t *testing.T) {
	off := render(t, "--set", "featureGates=WorkloadSpread=false")
	assert.Equal(t, []string{spreadWebhook}, keys(spreadWebhooks(t, off)))
	for _, w := range off.mutatingWithSpread(t).Webhooks {
		assert.NotEqual(t, spreadscope.CreateWebhook, w.Name)
	}
	assert.Nil(t, ruleFor(off.clusterRoleRules(t), "workloadspreads/status"))

	ignore := render(t, "--set", "webhook.failurePolicy.workloadSpread=Ignore")
	assert.Equal(t, admissionregistrationv1.Ignore, *ignore.mutatingWithSpread(t).Webhooks[0].FailurePolicy)
	for name, w := range spreadWebhooks(t, ignore) {
		assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy, name)
	}
}
