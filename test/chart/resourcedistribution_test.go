package chart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const rdWebhook = "vresourcedistribution.kb.io"

// kruise-controller may write every namespace's Secrets only with gate ResourceDistributionGate
// (Alpha, off by default: also with AllAlpha), and then the ResourceDistribution webhook is
// configured too; no ClusterRole that aggregates into another (admin, edit, …) ever grants
// ResourceDistributions.
func TestRenderResourceDistributionGate(t *testing.T) {
	for _, tc := range []struct {
		gates string
		on    bool
	}{
		{gates: ""},
		{gates: "ResourceDistributionGate=true", on: true},
		{gates: "AllAlpha=true", on: true},
		{gates: "AllAlpha=true,ResourceDistributionGate=false"},
		{gates: "AllBeta=true"},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			objs := render(t, "--set-string", "featureGates="+strings.ReplaceAll(tc.gates, ",", `\,`))
			writesSecrets := false
			for key, obj := range objs {
				role, ok := obj.(*rbacv1.ClusterRole)
				if !ok {
					continue
				}
				if allows(role.Rules, "", "secrets", "create") || allows(role.Rules, "", "secrets", "delete") {
					writesSecrets = true
					assert.Equal(t, "ClusterRole//kruise-controller-resourcedistribution", key, "only ResourceDistribution's role writes every namespace's Secrets")
				}
				aggregates := role.AggregationRule != nil
				for k := range role.Labels {
					aggregates = aggregates || strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-")
				}
				if aggregates {
					for _, r := range role.Rules {
						assert.NotContains(t, r.Resources, "resourcedistributions", key)
						assert.NotContains(t, r.Resources, "*", key)
					}
				}
			}
			assert.Equal(t, tc.on, writesSecrets)
			for _, key := range []string{"ClusterRole//kruise-controller-resourcedistribution", "ClusterRoleBinding//kruise-controller-resourcedistribution"} {
				assert.Equal(t, tc.on, objs[key] != nil, key)
			}
			var w *admissionregistrationv1.ValidatingWebhook
			for i, h := range objs.validating(t).Webhooks {
				if h.Name == rdWebhook {
					w = &objs.validating(t).Webhooks[i]
				}
			}
			require.Equal(t, tc.on, w != nil)
			if !tc.on {
				return
			}
			assert.Equal(t, validate.ResourceDistributionPath, *w.ClientConfig.Service.Path)
			assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy)
			require.Len(t, w.Rules, 1)
			assert.Equal(t, []string{"resourcedistributions"}, w.Rules[0].Resources)
			assert.Equal(t, []string{"v1alpha1"}, w.Rules[0].APIVersions)
			assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, w.Rules[0].Operations)
			assert.Equal(t, admissionregistrationv1.ClusterScope, *w.Rules[0].Scope)
		})
	}
}
