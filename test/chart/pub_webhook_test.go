package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/nodekruise/kruise/pkg/controller/pubscope"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/disruption"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const budgetWebhook = "vpodunavailablebudget.kb.io"

// isPUBWebhook: the PodUnavailableBudget entries of the validating configuration.
func isPUBWebhook(w admissionregistrationv1.ValidatingWebhook) bool {
	return w.Name == pubscope.PodWebhook || w.Name == pubscope.EvictionWebhook || w.Name == budgetWebhook
}

// checkPUBConditions: the pod entries are never sent kube-system's or kruise's pods, an update
// only when it may disrupt, and nothing until kruise-controller writes the budgets' condition;
// the budget's entry skips kruise-controller's own writes.
func checkPUBConditions(t *testing.T, w admissionregistrationv1.ValidatingWebhook, ns string) {
	t.Helper()
	switch w.Name {
	case pubscope.PodWebhook:
		assert.Equal(t, []admissionregistrationv1.MatchCondition{
			podscope.Condition(ns),
			{Name: pubscope.NotTerminatingConditionName, Expression: pubscope.NotTerminatingExpression},
			{Name: pubscope.DisruptiveUpdateConditionName, Expression: pubscope.DisruptiveUpdateExpression},
			{Name: pubscope.ConditionName, Expression: pubscope.NoneExpression},
		}, w.MatchConditions, w.Name)
		assert.Equal(t, podscope.NamespaceSelector(ns), w.NamespaceSelector, w.Name)
	case pubscope.EvictionWebhook:
		assert.Equal(t, []admissionregistrationv1.MatchCondition{
			podscope.Condition(ns), {Name: pubscope.ConditionName, Expression: pubscope.NoneExpression},
		}, w.MatchConditions, w.Name)
		assert.Equal(t, podscope.NamespaceSelector(ns), w.NamespaceSelector, w.Name)
	default:
		assert.Equal(t, validate.ControllerMatchConditions(ns), w.MatchConditions, w.Name)
	}
}

func pubWebhooks(t *testing.T, objs rendered) map[string]admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	out := map[string]admissionregistrationv1.ValidatingWebhook{}
	for _, w := range objs.validating(t).Webhooks {
		if isPUBWebhook(w) {
			out[w.Name] = w
		}
	}
	return out
}

func webhookRule(ops []admissionregistrationv1.OperationType, group, version string, resources ...string) admissionregistrationv1.RuleWithOperations {
	scope := admissionregistrationv1.NamespacedScope
	return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
		APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources, Scope: &scope}}
}

var (
	opsDelete = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	opsUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	opsCreate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
)

// By default (PodUnavailableBudgetDeleteGate on, the update gate off): deletes and evictions of
// pods, with OpenKruise's names and path, failurePolicy Fail, NoneOnDryRun (the admission charges
// the budget); no UPDATE is ever sent.
func TestRenderPUBWebhooksByDefault(t *testing.T) {
	hooks := pubWebhooks(t, render(t))
	require.Len(t, hooks, 3)
	for name, w := range hooks {
		assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy, name)
		assert.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, *w.SideEffects, name)
		assert.Equal(t, []string{"v1"}, w.AdmissionReviewVersions, name)
		assert.Equal(t, certs.ServiceName, w.ClientConfig.Service.Name, name)
		assert.EqualValues(t, 5, *w.TimeoutSeconds, name)
		checkPUBConditions(t, w, "kruise-system")
	}
	pod, eviction, budget := hooks[pubscope.PodWebhook], hooks[pubscope.EvictionWebhook], hooks[budgetWebhook]
	assert.Equal(t, disruption.Path, *pod.ClientConfig.Service.Path)
	assert.Equal(t, disruption.Path, *eviction.ClientConfig.Service.Path)
	assert.Equal(t, validate.PodUnavailableBudgetPath, *budget.ClientConfig.Service.Path)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsDelete, "", "v1", "pods")}, pod.Rules)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsCreate, "", "v1", "pods/eviction")}, eviction.Rules)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule([]admissionregistrationv1.OperationType{
		admissionregistrationv1.Create, admissionregistrationv1.Update}, "policy.kruise.io", "v1alpha1", "podunavailablebudgets")}, budget.Rules)

	rules := render(t).clusterRoleRules(t)
	for _, resource := range []string{"podunavailablebudgets", "podunavailablebudgets/status", "replicasets"} {
		assert.NotNil(t, ruleFor(rules, resource), resource)
	}
}

// The gates decide what is sent: UPDATE (and pods/resize) only with the update gate; with both
// off only the budget's entry, which refuses every budget.
func TestRenderPUBWebhooksFollowTheGates(t *testing.T) {
	hooks := pubWebhooks(t, render(t, "--set", "featureGates=PodUnavailableBudgetUpdateGate=true"))
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsDelete, "", "v1", "pods"), webhookRule(opsUpdate, "", "v1", "pods", "pods/resize")},
		hooks[pubscope.PodWebhook].Rules)
	assert.Contains(t, hooks, pubscope.EvictionWebhook)

	hooks = pubWebhooks(t, render(t, "--set", "featureGates=AllAlpha=true\\,PodUnavailableBudgetDeleteGate=false"))
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsUpdate, "", "v1", "pods", "pods/resize")}, hooks[pubscope.PodWebhook].Rules)
	assert.NotContains(t, hooks, pubscope.EvictionWebhook)

	hooks = pubWebhooks(t, render(t, "--set", "featureGates=AllBeta=false"))
	assert.Equal(t, []string{budgetWebhook}, keys(hooks))

	hooks = pubWebhooks(t, render(t, "--set", "webhook.failurePolicy.podUnavailableBudget=Ignore"))
	for name, w := range hooks {
		assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy, name)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
