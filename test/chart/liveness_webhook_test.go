package chart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/livenessinjection"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
)

const livenessWebhook = "menhancedliveness.kb.io"

func livenessEntry(objs rendered, t *testing.T) (admissionregistrationv1.MutatingWebhook, int, bool) {
	t.Helper()
	for i, w := range objs.mutatingWithSpread(t).Webhooks {
		if w.Name == livenessWebhook {
			return w, i, true
		}
	}
	return admissionregistrationv1.MutatingWebhook{}, -1, false
}

// The enhanced liveness entry is rendered only with EnhancedLivenessProbe (Alpha, off by
// default) and KruiseDaemon, as kruise-controller serves it.
func TestRenderLivenessWebhookFollowsTheGates(t *testing.T) {
	for _, tc := range []struct {
		gates string
		on    bool
	}{
		{gates: ""},
		{gates: "EnhancedLivenessProbe=true", on: true},
		{gates: "AllAlpha=true", on: true},
		{gates: "AllAlpha=true,EnhancedLivenessProbe=false"},
		{gates: "EnhancedLivenessProbe=true,KruiseDaemon=false"},
	} {
		args := []string{}
		if tc.gates != "" {
			args = append(args, "--set", "featureGates="+strings.ReplaceAll(tc.gates, ",", `\,`))
		}
		_, _, found := livenessEntry(render(t, args...), t)
		assert.Equal(t, tc.on, found, tc.gates)
	}
}

// On: after SidecarSet injection and launch priority, reinvoked, failurePolicy Ignore whatever
// webhook.failurePolicy.pod says, only opted-in pods outside kube-system and kruise's namespace.
func TestRenderLivenessWebhook(t *testing.T) {
	objs := render(t, "--set", "featureGates=EnhancedLivenessProbe=true", "--set", "webhook.failurePolicy.pod=Fail")
	w, i, found := livenessEntry(objs, t)
	require.True(t, found)
	hooks := objs.mutatingWithSpread(t).Webhooks
	var pod int
	for j, h := range hooks {
		if h.Name == "mpod.kb.io" {
			pod = j
		}
	}
	assert.Greater(t, i, pod, "after launch priority (and SidecarSet injection before it)")
	assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
	require.NotNil(t, w.ReinvocationPolicy)
	assert.Equal(t, admissionregistrationv1.IfNeededReinvocationPolicy, *w.ReinvocationPolicy)
	assert.Equal(t, certs.ServiceName, w.ClientConfig.Service.Name)
	assert.Equal(t, livenessinjection.Path, *w.ClientConfig.Service.Path)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{webhookRule(opsCreate, "", "v1", "pods")}, w.Rules)
	assert.Equal(t, podscope.NamespaceSelector("kruise-system"), w.NamespaceSelector)
	assert.Equal(t, livenessinjection.MatchConditions("kruise-system"), w.MatchConditions,
		"the chart's matchConditions are pkg/webhook/livenessinjection's")
}
