package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/ppsinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const (
	ppsPodWebhook = "mpersistentpodstate-pod.kb.io"
	ppsWebhook    = "vpersistentpodstate.kb.io"
)

// The PersistentPodState pod entry: always (no gate), failurePolicy Ignore whatever
// webhook.failurePolicy.pod says, only StatefulSet pods outside kube-system and kruise's
// namespace, the path and conditions pkg/webhook/ppsinjection serves.
func TestRenderPersistentPodStatePodWebhook(t *testing.T) {
	for _, ns := range []string{"kruise-system", "ops"} {
		objs := render(t, "--set", "webhook.failurePolicy.pod=Fail", "--set", "installation.namespace="+ns)
		var w *admissionregistrationv1.MutatingWebhook
		for i, h := range objs.mutatingWithSpread(t).Webhooks {
			if h.Name == ppsPodWebhook {
				w = &objs.mutatingWithSpread(t).Webhooks[i]
			}
		}
		require.NotNil(t, w, ns)
		assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy)
		assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
		assert.Equal(t, admissionregistrationv1.NeverReinvocationPolicy, *w.ReinvocationPolicy)
		assert.Equal(t, certs.ServiceName, w.ClientConfig.Service.Name)
		assert.Equal(t, ns, w.ClientConfig.Service.Namespace)
		assert.Equal(t, ppsinjection.Path, *w.ClientConfig.Service.Path)
		assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsCreate, "", "v1", "pods")}, w.Rules)
		assert.Equal(t, podscope.NamespaceSelector(ns), w.NamespaceSelector)
		assert.Equal(t, ppsinjection.MatchConditions(ns), w.MatchConditions, "the chart's matchConditions are pkg/webhook/ppsinjection's")
	}
}

// The PersistentPodState validating entry: CREATE and UPDATE of v1alpha1 PersistentPodStates,
// Fail, OpenKruise's name and path.
func TestRenderPersistentPodStateWebhook(t *testing.T) {
	var w *admissionregistrationv1.ValidatingWebhook
	objs := render(t)
	for i, h := range objs.validating(t).Webhooks {
		if h.Name == ppsWebhook {
			w = &objs.validating(t).Webhooks[i]
		}
	}
	require.NotNil(t, w)
	assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy)
	assert.Equal(t, validate.PersistentPodStatePath, *w.ClientConfig.Service.Path)
	require.Len(t, w.Rules, 1)
	assert.Equal(t, []string{"apps.kruise.io"}, w.Rules[0].APIGroups)
	assert.Equal(t, []string{"v1alpha1"}, w.Rules[0].APIVersions)
	assert.Equal(t, []string{"persistentpodstates"}, w.Rules[0].Resources)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, w.Rules[0].Operations)
}
