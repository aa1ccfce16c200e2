package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodekruise/kruise/pkg/webhook/deletionprotection"
)

const (
	dpPolicyKey  = "ValidatingAdmissionPolicy//kruise-deletion-protection"
	dpBindingKey = "ValidatingAdmissionPolicyBinding//kruise-deletion-protection"
	dpRoleKey    = "ClusterRole//kruise-controller-deletion-protection"
	dpWebhook    = "vdeletionprotection.kb.io"
)

func (r rendered) deletionWebhook(t *testing.T) *admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	hooks := r.validating(t).Webhooks
	for i := range hooks {
		if hooks[i].Name == dpWebhook {
			require.Equal(t, len(hooks)-1, i, "last: deploy/overlays/local appends it")
			return &hooks[i]
		}
	}
	return nil
}

// kruise.gateEnabled reads a default-false Beta gate (ResourcesDeletionProtection) and an Alpha
// one (DeletionProtectionForCRDCascadingGate) as the binaries do: the explicit value, else
// AllBeta / AllAlpha, else the default; the CRD gate is forced off without the first.
func TestRenderDeletionProtectionGates(t *testing.T) {
	for _, tc := range []struct {
		gates      string
		on, crdsOn bool
	}{
		{gates: ""},
		{gates: "ResourcesDeletionProtection=true", on: true},
		{gates: "ResourcesDeletionProtection=false,AllBeta=true"},
		{gates: "AllBeta=true", on: true},
		{gates: "AllBeta=false"},
		{gates: "AllAlpha=true"},
		{gates: "DeletionProtectionForCRDCascadingGate=true"},
		{gates: "ResourcesDeletionProtection=true,AllAlpha=true", on: true, crdsOn: true},
		{gates: " ResourcesDeletionProtection = True , DeletionProtectionForCRDCascadingGate=true", on: true, crdsOn: true},
		{gates: "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true,AllAlpha=false", on: true, crdsOn: true},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			objs := render(t, "--set-string", "featureGates="+strings.ReplaceAll(tc.gates, ",", `\,`))
			for _, key := range []string{dpPolicyKey, dpBindingKey, dpRoleKey, "ClusterRoleBinding//kruise-controller-deletion-protection"} {
				assert.Equal(t, tc.on, objs[key] != nil, key)
			}
			w := objs.deletionWebhook(t)
			require.Equal(t, tc.on, w != nil)
			if !tc.on {
				return
			}
			var resources []string
			for _, r := range w.Rules {
				assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, r.Operations)
				resources = append(resources, r.Resources...)
			}
			if tc.crdsOn {
				assert.Equal(t, []string{"namespaces", "customresourcedefinitions"}, resources)
			} else {
				assert.Equal(t, []string{"namespaces"}, resources, "a Cascading CRD is the policy's to refuse without the gate")
			}
			role := objs[dpRoleKey].(*rbacv1.ClusterRole)
			assert.Equal(t, tc.crdsOn, allows(role.Rules, "*", "*", "list"), "list of any kind only with the CRD gate")
			assert.True(t, allows(role.Rules, "", "pods", "list"))
			assert.True(t, allows(role.Rules, "", "persistentvolumeclaims", "list"))
			for _, r := range role.Rules {
				assert.Equal(t, []string{"list"}, r.Verbs, "the webhook only lists")
			}
			policy := objs[dpPolicyKey].(*admissionregistrationv1.ValidatingAdmissionPolicy)
			assert.Equal(t, !tc.crdsOn, slices.ContainsFunc(policy.Spec.Validations, func(v admissionregistrationv1.Validation) bool {
				return strings.Contains(v.MessageExpression, "DeletionProtectionForCRDCascadingGate")
			}), "without the CRD gate the policy refuses a Cascading CRD")
		})
	}
}

// The webhook entry: DELETE of Namespaces (and CRDs), only objects labelled Cascading, never
// kube-system, the path pkg/webhook/deletionprotection serves, its own failure policy.
func TestRenderDeletionProtectionWebhook(t *testing.T) {
	gates := `featureGates=ResourcesDeletionProtection=true\,DeletionProtectionForCRDCascadingGate=true`
	w := render(t, "--set", gates).deletionWebhook(t)
	require.NotNil(t, w)
	assert.Equal(t, deletionprotection.Path, *w.ClientConfig.Service.Path)
	assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy, "an opted-in object stays protected during an outage")
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
	require.NotNil(t, w.ObjectSelector)
	require.Len(t, w.ObjectSelector.MatchExpressions, 1)
	assert.Equal(t, deletionprotection.Label, w.ObjectSelector.MatchExpressions[0].Key)
	assert.Equal(t, []string{deletionprotection.Cascading}, w.ObjectSelector.MatchExpressions[0].Values)
	require.NotNil(t, w.NamespaceSelector)
	assert.Equal(t, []string{"kube-system"}, w.NamespaceSelector.MatchExpressions[0].Values)
	for _, r := range w.Rules {
		assert.Equal(t, admissionregistrationv1.ClusterScope, *r.Scope)
	}

	w = render(t, "--set", gates, "--set", "webhook.failurePolicy.deletionProtection=Ignore").deletionWebhook(t)
	assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy)
	out, err := runHelm(t, "template", "kruise", chartDir(t), "--kube-version", kubeVersion, "--set", gates, "--set", "webhook.failurePolicy.deletionProtection=ignore")
	require.Error(t, err)
	assert.Contains(t, out, `webhook.failurePolicy.deletionProtection must be Fail or Ignore, got "ignore"`)
}

// Without the webhooks the policy still protects, and refuses the Cascading Namespaces and CRDs it
// cannot check rather than admitting them; no webhook RBAC is rendered.
func TestRenderDeletionProtectionWithoutWebhooks(t *testing.T) {
	objs := render(t, "--set", `featureGates=ResourcesDeletionProtection=true\,DeletionProtectionForCRDCascadingGate=true`,
		"--set", "webhook.enabled=false", "--set", "externalCerts.enabled=true", "--set", "webhook.caBundle="+testCA)
	require.Contains(t, objs, dpPolicyKey)
	assert.NotContains(t, objs, dpRoleKey)
	policy := objs[dpPolicyKey].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	var unchecked string
	for _, v := range policy.Spec.Variables {
		if v.Name == "unchecked" {
			unchecked = v.Expression
		}
	}
	assert.Contains(t, unchecked, "'namespaces', 'customresourcedefinitions'")
}
