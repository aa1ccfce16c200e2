package chart

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/controller/spreadscope"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/crrfill"
	"github.com/nodekruise/kruise/pkg/webhook/ejobrequester"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	wlp "github.com/nodekruise/kruise/pkg/webhook/priorityinjection"
	"github.com/nodekruise/kruise/pkg/webhook/probeinjection"
	"github.com/nodekruise/kruise/pkg/webhook/sidecarinjection"
	"github.com/nodekruise/kruise/pkg/webhook/uddefaults"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const (
	mutatingKey   = "MutatingWebhookConfiguration//" + certs.MutatingWebhookConfigurationName
	validatingKey = "ValidatingWebhookConfiguration//" + certs.ValidatingWebhookConfigurationName
	serviceKey    = "Service/kruise-system/" + certs.ServiceName
	certsRoleKey  = "Role/kruise-system/kruise-controller-webhook-certs"
)

// A test CA (PEM); the chart only checks its shape and base64-encodes it.
const testCA = "-----BEGIN CERTIFICATE-----\nMIIBdTCCARugAwIBAgIBATAKBggqhkjOPQQDAjAAMB4XDTI1MDEwMTAwMDAwMFoX\n-----END CERTIFICATE-----\n"

// mutating is the mutating configuration without the WorkloadSpread entry (checked in
// spread_webhook_test.go, with mutatingWithSpread).
func (r rendered) mutating(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	m := r.mutatingWithSpread(t).DeepCopy()
	// The PersistentPodState pod entry is checked in pps_webhook_test.go.
	m.Webhooks = slices.DeleteFunc(m.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return w.Name == spreadscope.CreateWebhook || w.Name == ppsPodWebhook
	})
	return m
}

func (r rendered) mutatingWithSpread(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	obj, ok := r[mutatingKey]
	require.True(t, ok, "no mutating configuration in %v", r.keys())
	return obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
}

func (r rendered) clusterRoleRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	obj, ok := r["ClusterRole//kruise-controller"]
	require.True(t, ok)
	return obj.(*rbacv1.ClusterRole).Rules
}

// conversionRule is the rule on CRDs the conversion webhook's certificates need (a watch); the
// storage version migration has a rule of its own (get).
func conversionRule(rules []rbacv1.PolicyRule) *rbacv1.PolicyRule {
	for i := range rules {
		if slices.Contains(rules[i].Resources, "customresourcedefinitions") && slices.Contains(rules[i].Verbs, "watch") {
			return &rules[i]
		}
	}
	return nil
}

func ruleFor(rules []rbacv1.PolicyRule, resource string) *rbacv1.PolicyRule {
	for i := range rules {
		if slices.Contains(rules[i].Resources, resource) {
			return &rules[i]
		}
	}
	return nil
}

// Off (webhook.enabled=false, the opt-out): no webhook object, no webhook
// flag or port, no webhook RBAC, no conversion hooks, and the CRR policy
// refuses read-only fields at create itself; only the barrier controller's
// ConfigMap rule is new.
func TestRenderWebhookOff(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=false", "--set", "externalCerts.enabled=true", "--set", "webhook.caBundle="+testCA)
	for _, key := range []string{mutatingKey, validatingKey, serviceKey, certsRoleKey, "RoleBinding/kruise-system/kruise-controller-webhook-certs",
		"Job/kruise-system/kruise-conversion-reset", "Job/kruise-system/kruise-conversion-setup", "ServiceAccount/kruise-system/kruise-conversion-hook"} {
		assert.NotContains(t, objs, key)
	}
	for _, key := range objs.keys() {
		assert.NotContains(t, key, "webhook", "nothing of the webhooks")
	}
	policy := objs["ValidatingAdmissionPolicy//kruise-crr-read-only-fields"].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	assert.Contains(t, policy.Spec.Validations[0].Expression, "request.operation != 'CREATE'", "the policy refuses read-only fields at create")
	c := objs.deployment(t).Spec.Template.Spec.Containers[0]
	assert.NotContains(t, strings.Join(c.Args, " "), "webhook")
	assert.Contains(t, c.Args, "--feature-gates=", "external certificates mean nothing without the webhook")
	for _, p := range c.Ports {
		assert.NotEqual(t, "webhook", p.Name)
	}
	rules := objs.clusterRoleRules(t)
	cm := ruleFor(rules, "configmaps")
	require.NotNil(t, cm, "the barrier controller runs always")
	assert.Equal(t, []string{"get", "create", "update"}, cm.Verbs)
	assert.Empty(t, cm.ResourceNames)
	assert.Nil(t, ruleFor(rules, "mutatingwebhookconfigurations"))
	assert.Nil(t, conversionRule(rules), "only the storage version migration's get")
}

// On by default, with kruise's own certificates: the Service, both
// configurations (each webhook with its matchConditions and, for pods, its
// namespaceSelector), the flags and port, and RBAC limited by name that lets
// kruise write.
func TestRenderWebhookOnByDefault(t *testing.T) {
	objs := render(t)

	svc := objs[serviceKey].(*corev1.Service)
	require.Len(t, svc.Spec.Ports, 1)
	assert.EqualValues(t, 443, svc.Spec.Ports[0].Port)
	assert.Equal(t, intstr.FromString("webhook"), svc.Spec.Ports[0].TargetPort)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "kruise-controller"}, svc.Spec.Selector)

	c := objs.deployment(t).Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "--webhook-enabled=true")
	assert.Contains(t, c.Args, "--webhook-addr=:9876")
	assert.Contains(t, c.Args, "--feature-gates=", "managed certificates: EnableExternalCerts stays off")
	assert.Contains(t, c.Args, "--webhook-conversion-crds=nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io", "conversion is on by default with the webhooks")
	assert.Contains(t, c.Ports, corev1.ContainerPort{Name: "webhook", ContainerPort: 9876})

	m := objs.mutating(t)
	require.Len(t, m.Webhooks, 7)
	ud := m.Webhooks[6]
	assert.Equal(t, "muniteddeployment.kb.io", ud.Name)
	assert.Equal(t, uddefaults.Path, *ud.ClientConfig.Service.Path)
	assert.Equal(t, admissionregistrationv1.Fail, *ud.FailurePolicy)
	assert.Equal(t, []string{"uniteddeployments"}, ud.Rules[0].Resources, "UnitedDeployments only: an outage blocks nothing else")
	assert.Equal(t, []string{"v1alpha1"}, ud.Rules[0].APIVersions)
	assert.Equal(t, validate.WorkloadMatchConditions("kruise-system"), ud.MatchConditions)
	inj := m.Webhooks[0]
	assert.Equal(t, sidecarsetscope.DefaultWebhook, inj.Name, "injection first: launch priority sees the injected containers")
	assert.Equal(t, admissionregistrationv1.Fail, *inj.FailurePolicy)
	assert.Equal(t, sidecarinjection.Path, *inj.ClientConfig.Service.Path)
	require.Len(t, inj.Rules, 1)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, inj.Rules[0].Operations)
	assert.Equal(t, []string{"pods"}, inj.Rules[0].Resources)
	assert.Equal(t, []admissionregistrationv1.MatchCondition{
		podscope.Condition("kruise-system"),
		{Name: sidecarsetscope.ConditionName, Expression: sidecarsetscope.NoneExpression},
	}, inj.MatchConditions, "never called until kruise-controller writes the SidecarSets' condition")
	w := m.Webhooks[1]
	assert.Equal(t, "mpod.kb.io", w.Name)
	require.NotNil(t, w.ReinvocationPolicy)
	assert.Equal(t, admissionregistrationv1.IfNeededReinvocationPolicy, *w.ReinvocationPolicy)
	assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
	assert.Equal(t, []string{"v1"}, w.AdmissionReviewVersions)
	assert.EqualValues(t, 5, *w.TimeoutSeconds)
	assert.Equal(t, certs.ServiceName, w.ClientConfig.Service.Name)
	assert.Equal(t, "kruise-system", w.ClientConfig.Service.Namespace)
	assert.Equal(t, wlp.Path, *w.ClientConfig.Service.Path)
	assert.Empty(t, w.ClientConfig.CABundle, "kruise writes the caBundle")
	require.Len(t, w.Rules, 1)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, w.Rules[0].Operations)
	assert.Equal(t, []string{"pods"}, w.Rules[0].Resources)
	assert.Equal(t, wlp.MatchConditions("kruise-system"), w.MatchConditions, "the chart's matchConditions are pkg/webhook/priorityinjection's")
	for _, hook := range m.Webhooks[:2] {
		assert.Equal(t, podscope.NamespaceSelector("kruise-system"), hook.NamespaceSelector, "%s never selects kube-system nor kruise's namespace", hook.Name)
	}
	checkCRRMutating(t, m.Webhooks[2], admissionregistrationv1.Fail, "kruise-system")
	def := m.Webhooks[3]
	assert.Equal(t, "msidecarset-defaults.kb.io", def.Name)
	assert.Equal(t, sidecarinjection.SidecarSetPath, *def.ClientConfig.Service.Path)
	assert.Equal(t, []string{"sidecarsets"}, def.Rules[0].Resources)
	assert.Equal(t, admissionregistrationv1.Equivalent, *def.MatchPolicy, "v1alpha1 SidecarSets are sent as v1beta1")
	assert.Equal(t, validate.ControllerMatchConditions("kruise-system"), def.MatchConditions, "kruise-controller's writes are not sent")
	checkEJobMutating(t, m.Webhooks[4], "kruise-system")
	checkPPMMutating(t, m.Webhooks[5], "kruise-system")
	assert.Empty(t, m.Annotations)
	policy := objs["ValidatingAdmissionPolicy//kruise-crr-read-only-fields"].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	for _, v := range policy.Spec.Validations {
		assert.NotContains(t, v.Expression, "'CREATE'", "with the webhooks, the CRR mutating webhook refuses read-only fields at create, then fills them in")
	}

	objs.checkValidating(t, nil)

	rules := objs.clusterRoleRules(t)
	cfg := ruleFor(rules, "mutatingwebhookconfigurations")
	require.NotNil(t, cfg)
	assert.ElementsMatch(t, []string{certs.MutatingWebhookConfigurationName, certs.ValidatingWebhookConfigurationName}, cfg.ResourceNames)
	assert.Equal(t, []string{"get", "list", "watch", "patch"}, cfg.Verbs)
	for _, resource := range []string{"sidecarsets", "namespaces", "controllerrevisions"} {
		r := ruleFor(rules, resource)
		require.NotNil(t, r, resource)
		assert.Subset(t, r.Verbs, []string{"get", "list", "watch"}, resource)
	}
	role := objs[certsRoleKey].(*rbacv1.Role)
	require.Len(t, role.Rules, 2)
	assert.Equal(t, []string{certs.SecretName}, role.Rules[0].ResourceNames)
	assert.Equal(t, []string{"get", "list", "watch", "update"}, role.Rules[0].Verbs)
	assert.Equal(t, []string{"create"}, role.Rules[1].Verbs)
	assert.Contains(t, objs, "RoleBinding/kruise-system/kruise-controller-webhook-certs")
}

func TestRenderWebhookFailurePolicy(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=true", "--set", "webhook.failurePolicy.pod=Ignore", "--set", "webhook.timeoutSeconds=3")
	w := objs.mutating(t).Webhooks[1]
	assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Fail, *objs.mutating(t).Webhooks[0].FailurePolicy, "injection has its own value")
	assert.EqualValues(t, 3, *objs.mutating(t).Webhooks[0].TimeoutSeconds)
	assert.EqualValues(t, 3, *w.TimeoutSeconds)
	for _, v := range objs.validating(t).Webhooks {
		if v.Name == spreadscope.DeleteWebhook || v.Name == spreadscope.EvictionWebhook {
			continue // always Ignore: accounting that never refuses
		}
		assert.Equal(t, admissionregistrationv1.Fail, *v.FailurePolicy, "%s: each group has its own value", v.Name)
		assert.EqualValues(t, 3, *v.TimeoutSeconds, v.Name)
	}

	objs = render(t, "--set", "webhook.enabled=true", "--set", "webhook.failurePolicy.sidecarSetInjection=Ignore")
	assert.Equal(t, admissionregistrationv1.Ignore, *objs.mutating(t).Webhooks[0].FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Fail, *objs.mutating(t).Webhooks[1].FailurePolicy)

	objs = render(t, "--set", "webhook.enabled=true", "--set", "webhook.failurePolicy.containerRecreateRequest=Ignore")
	objs.checkValidating(t, map[string]admissionregistrationv1.FailurePolicyType{"vcontainerrecreaterequest.kb.io": admissionregistrationv1.Ignore})
	checkCRRMutating(t, objs.mutating(t).Webhooks[2], admissionregistrationv1.Ignore, "kruise-system")
	assert.Equal(t, admissionregistrationv1.Fail, *objs.mutating(t).Webhooks[1].FailurePolicy)
	objs = render(t, "--set", "webhook.enabled=true", "--set", "webhook.failurePolicy.imagePullJob=Ignore")
	objs.checkValidating(t, map[string]admissionregistrationv1.FailurePolicyType{
		"vimagepulljob-v1beta1.kb.io": admissionregistrationv1.Ignore, "vimagelistpulljob-v1beta1.kb.io": admissionregistrationv1.Ignore})
	for value, name := range map[string]string{"cloneSet": "vcloneset.kb.io", "statefulSet": "vstatefulset.kb.io", "daemonSet": "vdaemonset.kb.io",
		"sidecarSet": "vsidecarset.kb.io", "unitedDeployment": "vuniteddeployment.kb.io"} {
		objs = render(t, "--set", "webhook.enabled=true", "--set", "webhook.failurePolicy."+value+"=Ignore")
		objs.checkValidating(t, map[string]admissionregistrationv1.FailurePolicyType{name: admissionregistrationv1.Ignore})
	}

	for _, group := range []string{"pod", "sidecarSetInjection", "containerRecreateRequest", "imagePullJob", "cloneSet", "statefulSet", "daemonSet", "sidecarSet", "workloadSpread"} {
		out, err := runHelm(t, "template", "kruise", chartDir(t), "--kube-version", kubeVersion,
			"--set", "webhook.enabled=true", "--set", "webhook.failurePolicy."+group+"=ignore")
		require.Error(t, err, group)
		assert.Contains(t, out, `webhook.failurePolicy.`+group+` must be Fail or Ignore, got "ignore"`)
	}
}

// checkCRRMutating checks the CRR mutating webhook: CREATE of CRRs only (v1alpha1 sent as
// v1beta1), the path pkg/webhook/crrfill serves, kruise-controller's own requests kept out, the
// containerRecreateRequest failure policy.
func checkCRRMutating(t *testing.T, w admissionregistrationv1.MutatingWebhook, policy admissionregistrationv1.FailurePolicyType, ns string) {
	t.Helper()
	assert.Equal(t, "mcontainerrecreaterequest.kb.io", w.Name, "OpenKruise's name")
	assert.Equal(t, policy, *w.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
	assert.Equal(t, admissionregistrationv1.Equivalent, *w.MatchPolicy)
	assert.Equal(t, crrfill.Path, *w.ClientConfig.Service.Path)
	assert.Equal(t, ns, w.ClientConfig.Service.Namespace)
	require.Len(t, w.Rules, 1)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, w.Rules[0].Operations)
	assert.Equal(t, []string{"apps.kruise.io"}, w.Rules[0].APIGroups)
	assert.Equal(t, []string{"v1beta1"}, w.Rules[0].APIVersions)
	assert.Equal(t, []string{"containerrecreaterequests"}, w.Rules[0].Resources)
	assert.Equal(t, validate.ControllerMatchConditions(ns), w.MatchConditions, "kruise-controller's own CRRs are not sent")
	assert.Nil(t, w.NamespaceSelector, "every namespace: only CRRs are sent")
}

// checkEJobMutating checks the EphemeralJob requester stamp: CREATE and UPDATE of v1alpha1
// EphemeralJobs, failurePolicy Fail whatever the values (a skipped stamp would let a user forge
// it), kruise-controller's writes and updates that keep the spec and the requester not sent.
func checkEJobMutating(t *testing.T, w admissionregistrationv1.MutatingWebhook, ns string) {
	t.Helper()
	checkRequesterMutating(t, w, "mephemeraljob.kb.io", ejobrequester.Path, "ephemeraljobs", validate.EphemeralJobMatchConditions(ns), ns)
}

// checkPPMMutating checks the PodProbeMarker requester stamp, as the EphemeralJob one.
func checkPPMMutating(t *testing.T, w admissionregistrationv1.MutatingWebhook, ns string) {
	t.Helper()
	checkRequesterMutating(t, w, "mpodprobemarker.kb.io", ejobrequester.PodProbeMarkerPath, "podprobemarkers", validate.PodProbeMarkerMatchConditions(ns), ns)
}

func checkRequesterMutating(t *testing.T, w admissionregistrationv1.MutatingWebhook, name, path, resource string, conds []admissionregistrationv1.MatchCondition, ns string) {
	t.Helper()
	assert.Equal(t, name, w.Name)
	assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy, name)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects, name)
	assert.Equal(t, path, *w.ClientConfig.Service.Path, name)
	assert.Equal(t, ns, w.ClientConfig.Service.Namespace, name)
	require.Len(t, w.Rules, 1, name)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, w.Rules[0].Operations, name)
	assert.Equal(t, []string{"v1alpha1"}, w.Rules[0].APIVersions, name)
	assert.Equal(t, []string{resource}, w.Rules[0].Resources, name)
	assert.Equal(t, conds, w.MatchConditions, name)
	assert.Nil(t, w.NamespaceSelector, name)
}

// The serverless pod webhook is rendered only with gate EnablePodProbeMarkerOnServerless (and
// PodProbeMarkerGate): pods at CREATE outside kube-system and kruise's namespace, failurePolicy
// Ignore whatever the values (every such pod is sent).
func TestRenderServerlessProbeWebhook(t *testing.T) {
	find := func(objs rendered) *admissionregistrationv1.MutatingWebhook {
		for _, w := range objs.mutating(t).Webhooks {
			if w.Name == "mpodprobemarker-pod.kb.io" {
				return &w
			}
		}
		return nil
	}
	assert.Nil(t, find(render(t)), "off by default (Alpha)")
	assert.Nil(t, find(render(t, "--set", "featureGates=EnablePodProbeMarkerOnServerless=true\\,PodProbeMarkerGate=false")))
	w := find(render(t, "--set", "featureGates=EnablePodProbeMarkerOnServerless=true", "--set", "webhook.failurePolicy.pod=Fail"))
	require.NotNil(t, w)
	assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy)
	assert.Equal(t, probeinjection.Path, *w.ClientConfig.Service.Path)
	require.Len(t, w.Rules, 1)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, w.Rules[0].Operations)
	assert.Equal(t, []string{"pods"}, w.Rules[0].Resources)
	assert.Equal(t, podscope.NamespaceSelector("kruise-system"), w.NamespaceSelector)
	assert.Equal(t, []admissionregistrationv1.MatchCondition{podscope.Condition("kruise-system")}, w.MatchConditions)
}

func (r rendered) validating(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	obj, ok := r[validatingKey]
	require.True(t, ok, "no validating configuration in %v", r.keys())
	return obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
}

// checkValidating checks the validating webhooks: OpenKruise's names where
// it has a validating webhook of the kind, CREATE (workloads: and UPDATE) of
// v1beta1 only (v1alpha1 sent as v1beta1), the paths pkg/webhook/validate
// serves, kruise-controller's own requests kept out of the kinds it writes
// (and workload updates that leave spec as is; SidecarSet updates that leave
// spec and the canary annotations as they are), the scope of the kind
// (SidecarSets are cluster-scoped), and failurePolicy Fail but for the
// webhooks named in policies.
func (r rendered) checkValidating(t *testing.T, policies map[string]admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	v := r.validating(t).DeepCopy()
	// The PodUnavailableBudget entries (pods, policy.kruise.io) are checked in pub_webhook_test.go,
	// WorkloadSpread's in spread_webhook_test.go, PersistentPodState's in pps_webhook_test.go.
	v.Webhooks = slices.DeleteFunc(v.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return isPUBWebhook(w) || isSpreadWebhook(w) || w.Name == ppsWebhook
	})
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	want := []struct {
		name, path, resource string
		operations           []admissionregistrationv1.OperationType
		matchConditions      []admissionregistrationv1.MatchCondition
	}{
		{"vcontainerrecreaterequest.kb.io", validate.CRRPath, "containerrecreaterequests", create,
			validate.ControllerMatchConditions("kruise-system")},
		{"vimagepulljob-v1beta1.kb.io", validate.ImagePullJobPath, "imagepulljobs", create,
			validate.ControllerMatchConditions("kruise-system")},
		{"vimagelistpulljob-v1beta1.kb.io", validate.ImageListPullJobPath, "imagelistpulljobs", create, nil},
		{"vcloneset.kb.io", validate.CloneSetPath, "clonesets", createUpdate, validate.WorkloadMatchConditions("kruise-system")},
		{"vstatefulset.kb.io", validate.StatefulSetPath, "statefulsets", createUpdate, validate.WorkloadMatchConditions("kruise-system")},
		{"vdaemonset.kb.io", validate.DaemonSetPath, "daemonsets", createUpdate, validate.WorkloadMatchConditions("kruise-system")},
		{"vsidecarset.kb.io", validate.SidecarSetPath, "sidecarsets", createUpdate, validate.SidecarSetMatchConditions("kruise-system")},
		{"vbroadcastjob.kb.io", validate.BroadcastJobPath, "broadcastjobs", createUpdate, validate.WorkloadMatchConditions("kruise-system")},
		{"vadvancedcronjob.kb.io", validate.AdvancedCronJobPath, "advancedcronjobs", createUpdate, validate.WorkloadMatchConditions("kruise-system")},
		{"vephemeraljob.kb.io", validate.EphemeralJobPath, "ephemeraljobs", createUpdate, validate.EphemeralJobMatchConditions("kruise-system")},
		{"vpodprobemarker.kb.io", validate.PodProbeMarkerPath, "podprobemarkers", createUpdate, validate.PodProbeMarkerMatchConditions("kruise-system")},
		{"vuniteddeployment.kb.io", validate.UnitedDeploymentPath, "uniteddeployments", createUpdate, validate.WorkloadMatchConditions("kruise-system")},
	}
	require.Len(t, v.Webhooks, len(want))
	for i, w := range want {
		got := v.Webhooks[i]
		assert.Equal(t, w.name, got.Name)
		policy, ok := policies[w.name]
		if !ok {
			policy = admissionregistrationv1.Fail
		}
		assert.Equal(t, policy, *got.FailurePolicy, w.name)
		effects := admissionregistrationv1.SideEffectClassNone
		if w.name == "vsidecarset.kb.io" {
			effects = admissionregistrationv1.SideEffectClassNoneOnDryRun // routes the injection webhook to what it admits
		}
		assert.Equal(t, effects, *got.SideEffects, w.name)
		assert.Equal(t, []string{"v1"}, got.AdmissionReviewVersions, w.name)
		assert.Equal(t, admissionregistrationv1.Equivalent, *got.MatchPolicy, w.name)
		assert.Equal(t, certs.ServiceName, got.ClientConfig.Service.Name, w.name)
		assert.Equal(t, "kruise-system", got.ClientConfig.Service.Namespace, w.name)
		assert.Equal(t, w.path, *got.ClientConfig.Service.Path, w.name)
		assert.EqualValues(t, 443, *got.ClientConfig.Service.Port, w.name)
		require.Len(t, got.Rules, 1, w.name)
		assert.Equal(t, w.operations, got.Rules[0].Operations, w.name)
		assert.Equal(t, []string{"apps.kruise.io"}, got.Rules[0].APIGroups, w.name)
		version := "v1beta1"
		if w.resource == "ephemeraljobs" || w.resource == "podprobemarkers" {
			version = "v1alpha1" // served in v1alpha1 only
			assert.Equal(t, admissionregistrationv1.Fail, *got.FailurePolicy, "%s: fixed, the requester's gate", w.name)
		}
		if w.resource == "uniteddeployments" {
			version = "v1alpha1" // OpenKruise serves it in v1alpha1 only
		}
		assert.Equal(t, []string{version}, got.Rules[0].APIVersions, w.name)
		assert.Equal(t, []string{w.resource}, got.Rules[0].Resources, w.name)
		scope := admissionregistrationv1.NamespacedScope
		if w.resource == "sidecarsets" {
			scope = admissionregistrationv1.ClusterScope
		}
		assert.Equal(t, scope, *got.Rules[0].Scope, w.name)
		if w.matchConditions != nil {
			assert.Equal(t, w.matchConditions, got.MatchConditions, w.name)
		} else {
			assert.Empty(t, got.MatchConditions, "%s: kruise-controller never creates these", w.name)
		}
	}
}

// externalCerts: the gate is turned on, the annotations are on both
// configurations, and kruise may only read.
func TestRenderExternalCerts(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=true", "--set", "featureGates=ImagePullJobGate=false",
		"--set", "externalCerts.enabled=true",
		"--set", `externalCerts.annotations.cert-manager\.io/inject-ca-from=kruise-system/kruise-webhook-certs`)
	want := map[string]string{"cert-manager.io/inject-ca-from": "kruise-system/kruise-webhook-certs"}
	assert.Equal(t, want, objs.mutating(t).Annotations)
	assert.Equal(t, want, objs[validatingKey].(*admissionregistrationv1.ValidatingWebhookConfiguration).Annotations)
	assert.Contains(t, objs.deployment(t).Spec.Template.Spec.Containers[0].Args, "--feature-gates=ImagePullJobGate=false,EnableExternalCerts=true")
	assert.Contains(t, objs.daemonSet(t).Spec.Template.Spec.Containers[0].Args, "--feature-gates=ImagePullJobGate=false",
		"the daemon's gates are left alone")

	cfg := ruleFor(objs.clusterRoleRules(t), "mutatingwebhookconfigurations")
	require.NotNil(t, cfg)
	assert.Equal(t, []string{"get", "list", "watch"}, cfg.Verbs, "external certificates: kruise patches nothing")
	role := objs[certsRoleKey].(*rbacv1.Role)
	require.Len(t, role.Rules, 1)
	assert.Equal(t, []string{"get", "list", "watch"}, role.Rules[0].Verbs)
}

// GitOps: the chart writes the CA it is given, and kruise only verifies.
func TestRenderWebhookCABundle(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=true", "--set-string", "webhook.caBundle="+testCA)
	for _, w := range objs.mutating(t).Webhooks {
		assert.Equal(t, testCA, string(w.ClientConfig.CABundle), w.Name)
	}
	assert.Contains(t, objs.deployment(t).Spec.Template.Spec.Containers[0].Args, "--feature-gates=EnableExternalCerts=true")
	assert.Empty(t, objs.mutating(t).Annotations, "no cainjector annotations unless externalCerts.enabled")
	for _, v := range objs.validating(t).Webhooks {
		assert.Equal(t, testCA, string(v.ClientConfig.CABundle), v.Name)
	}

	out, err := runHelm(t, "template", "kruise", chartDir(t), "--kube-version", kubeVersion,
		"--set", "webhook.enabled=true", "--set", "webhook.caBundle="+base64.StdEncoding.EncodeToString([]byte(testCA)))
	require.Error(t, err)
	assert.Contains(t, out, "webhook.caBundle must be a PEM CA certificate")
}

func TestRenderWebhookConversion(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=true")
	assert.Contains(t, objs.deployment(t).Spec.Template.Spec.Containers[0].Args, "--webhook-conversion-crds=nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io")
	crd := conversionRule(objs.clusterRoleRules(t))
	require.NotNil(t, crd)
	assert.Equal(t, []string{"nodeimages.apps.kruise.io", "clonesets.apps.kruise.io", "daemonsets.apps.kruise.io", "statefulsets.apps.kruise.io", "sidecarsets.apps.kruise.io"}, crd.ResourceNames)
	assert.Equal(t, []string{"get", "list", "watch", "patch"}, crd.Verbs)
	assert.Contains(t, objs, resetJobKey)
	assert.NotContains(t, objs, setupJobKey, "kruise's own certificates: the controller writes spec.conversion itself")

	// External certificates: kruise only reads the CRD; the chart's hooks set it up and undo it.
	objs = render(t, "--set", "webhook.enabled=true,externalCerts.enabled=true")
	crd = conversionRule(objs.clusterRoleRules(t))
	require.NotNil(t, crd)
	assert.Equal(t, []string{"get", "list", "watch"}, crd.Verbs)
	assert.Contains(t, objs, resetJobKey)
	assert.Contains(t, objs, setupJobKey)

	// Off: no flag, no CRD access, no hook.
	objs = render(t, "--set", "webhook.enabled=true,webhook.conversion.enabled=false")
	assert.NotContains(t, strings.Join(objs.deployment(t).Spec.Template.Spec.Containers[0].Args, " "), "--webhook-conversion-crds")
	assert.Nil(t, conversionRule(objs.clusterRoleRules(t)), "only the storage version migration's get")
	for _, k := range objs.keys() {
		assert.NotContains(t, k, "kruise-conversion-", "no hook object")
	}
}

const (
	resetJobKey = "Job/kruise-system/kruise-conversion-reset"
	setupJobKey = "Job/kruise-system/kruise-conversion-setup"
	hookSAKey   = "ServiceAccount/kruise-system/kruise-conversion-hook"
	hookRoleKey = "ClusterRole//kruise-conversion-hook"
	hookBindKey = "ClusterRoleBinding//kruise-conversion-hook"
)

// hookJob returns a hook Job and checks what every conversion hook shares: its own service
// account, placed and configured as the controller is.
func hookJob(t *testing.T, objs rendered, key string) (*batchv1.Job, corev1.Container) {
	t.Helper()
	obj, ok := objs[key]
	require.True(t, ok, "no hook Job %s in %v", key, objs.keys())
	job := obj.(*batchv1.Job)
	assert.Equal(t, "before-hook-creation,hook-succeeded", job.Annotations["helm.sh/hook-delete-policy"])
	pod := job.Spec.Template.Spec
	ctrl := objs.deployment(t).Spec.Template.Spec
	assert.Equal(t, "kruise-conversion-hook", pod.ServiceAccountName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	assert.Equal(t, ctrl.DNSPolicy, pod.DNSPolicy)
	assert.Equal(t, ctrl.HostNetwork, pod.HostNetwork)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, ctrl.Containers[0].Image, c.Image)
	return job, c
}

// hookRBAC checks the hooks' account: it exists for the hook events only and may only read and
// patch the converting CRDs.
func hookRBAC(t *testing.T, objs rendered, events string) {
	t.Helper()
	for _, key := range []string{hookSAKey, hookRoleKey, hookBindKey} {
		obj, ok := objs[key]
		require.True(t, ok, "no %s in %v", key, objs.keys())
		m, err := meta.Accessor(obj)
		require.NoError(t, err)
		assert.Equal(t, events, m.GetAnnotations()["helm.sh/hook"], key)
		assert.Equal(t, "-10", m.GetAnnotations()["helm.sh/hook-weight"], key, "created before the Jobs")
		assert.Equal(t, "before-hook-creation,hook-succeeded", m.GetAnnotations()["helm.sh/hook-delete-policy"], key)
	}
	assert.Equal(t, []rbacv1.PolicyRule{{
		APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
		ResourceNames: []string{"nodeimages.apps.kruise.io", "clonesets.apps.kruise.io", "daemonsets.apps.kruise.io", "statefulsets.apps.kruise.io", "sidecarsets.apps.kruise.io"}, Verbs: []string{"get", "patch"},
	}}, objs[hookRoleKey].(*rbacv1.ClusterRole).Rules)
	b := objs[hookBindKey].(*rbacv1.ClusterRoleBinding)
	assert.Equal(t, "kruise-conversion-hook", b.RoleRef.Name)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kruise-conversion-hook", Namespace: "kruise-system"}}, b.Subjects)
}

// helm uninstall runs kruise-controller reset-conversion before it deletes anything.
func TestRenderConversionResetHook(t *testing.T) {
	local := filepath.Join(chartDir(t), "..", "..", "overlays", "local", "values.yaml")
	objs := render(t, "--namespace", "kruise-system", "-f", local)
	job, c := hookJob(t, objs, resetJobKey)
	assert.Equal(t, "pre-delete", job.Annotations["helm.sh/hook"])
	assert.Equal(t, []string{"reset-conversion", "--crds=nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io"}, c.Args)
	assert.Subset(t, c.Env, objs.deployment(t).Spec.Template.Spec.Containers[0].Env[2:], "the controller's extra env (the local API server address)")
	hookRBAC(t, objs, "pre-delete")
	noHooks := render(t, "--namespace", "kruise-system", "--no-hooks", "-f", local)
	for _, key := range []string{resetJobKey, hookSAKey, hookRoleKey, hookBindKey} {
		assert.NotContains(t, noHooks, key)
	}
}

// External certificates: after each install and upgrade kruise-controller setup-conversion points
// the CRD at kruise's webhook and puts externalCerts.annotations on it.
func TestRenderConversionSetupHook(t *testing.T) {
	objs := render(t, "--namespace", "kruise-system", "--set", "webhook.enabled=true,externalCerts.enabled=true",
		"--set", `externalCerts.annotations.cert-manager\.io/inject-ca-from=kruise-system/kruise-webhook-certs`,
		"--set", `externalCerts.annotations.example\.com/team=a\,b=c`)
	job, c := hookJob(t, objs, setupJobKey)
	assert.Equal(t, "post-install,post-upgrade", job.Annotations["helm.sh/hook"])
	assert.Equal(t, []string{"setup-conversion", "--crds=nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io",
		"--annotation=cert-manager.io/inject-ca-from=kruise-system/kruise-webhook-certs",
		"--annotation=example.com/team=a,b=c"}, c.Args)
	hookRBAC(t, objs, "post-install,post-upgrade,pre-delete")

	// The chart owns the CA: it is written into the CRD too; no annotations without externalCerts.
	objs = render(t, "--namespace", "kruise-system", "--set", "webhook.enabled=true", "--set-string", "webhook.caBundle="+testCA,
		"--set", `externalCerts.annotations.cert-manager\.io/inject-ca-from=kruise-system/kruise-webhook-certs`)
	_, c = hookJob(t, objs, setupJobKey)
	assert.Equal(t, []string{"setup-conversion", "--crds=nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io", "--ca-bundle=$(KRUISE_CA_BUNDLE)"}, c.Args)
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "KRUISE_CA_BUNDLE", Value: testCA})
}

// A unix-socket health address has no metrics port; the webhook port is
// still declared.
func TestRenderWebhookWithUnixSocket(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=true", "--set", "manager.addr=unix:///run/kruise/controller.sock")
	c := objs.deployment(t).Spec.Template.Spec.Containers[0]
	assert.Equal(t, []corev1.ContainerPort{{Name: "webhook", ContainerPort: 9876}}, c.Ports)
}

// kruise-controller's own requests are recognised in any namespace kruise is
// installed in.
func TestRenderValidatingWebhooksInAnotherNamespace(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=true", "--set", "installation.namespace=ops")
	for _, w := range objs.validating(t).Webhooks {
		assert.Equal(t, "ops", w.ClientConfig.Service.Namespace, w.Name)
		switch {
		case isPUBWebhook(w):
			checkPUBConditions(t, w, "ops")
		case isSpreadWebhook(w):
			checkSpreadConditions(t, w, "ops")
		case w.Name == "vcloneset.kb.io" || w.Name == "vstatefulset.kb.io" || w.Name == "vdaemonset.kb.io" ||
			w.Name == "vbroadcastjob.kb.io" || w.Name == "vadvancedcronjob.kb.io" || w.Name == "vuniteddeployment.kb.io":
			assert.Equal(t, validate.WorkloadMatchConditions("ops"), w.MatchConditions, w.Name)
		case w.Name == "vsidecarset.kb.io":
			assert.Equal(t, validate.SidecarSetMatchConditions("ops"), w.MatchConditions, w.Name)
		case w.Name == "vephemeraljob.kb.io":
			assert.Equal(t, validate.EphemeralJobMatchConditions("ops"), w.MatchConditions, w.Name)
		case w.Name == "vpodprobemarker.kb.io":
			assert.Equal(t, validate.PodProbeMarkerMatchConditions("ops"), w.MatchConditions, w.Name)
		case len(w.MatchConditions) > 0:
			assert.Equal(t, validate.ControllerMatchConditions("ops"), w.MatchConditions, w.Name)
		}
		if len(w.MatchConditions) > 0 && w.Rules[0].APIGroups[0] != "" {
			assert.Contains(t, w.MatchConditions[0].Expression, "'system:serviceaccount:ops:kruise-controller'")
		}
	}
	for _, w := range objs.mutating(t).Webhooks {
		if w.Name == "mephemeraljob.kb.io" {
			checkEJobMutating(t, w, "ops")
			continue
		}
		if w.Name == "mpodprobemarker.kb.io" {
			checkPPMMutating(t, w, "ops")
			continue
		}
		if w.Name == "muniteddeployment.kb.io" {
			assert.Equal(t, validate.WorkloadMatchConditions("ops"), w.MatchConditions, w.Name)
			continue
		}
		if w.Rules[0].Resources[0] != "pods" {
			assert.Equal(t, validate.ControllerMatchConditions("ops"), w.MatchConditions, w.Name)
			continue
		}
		assert.Equal(t, podscope.NamespaceSelector("ops"), w.NamespaceSelector, w.Name)
		assert.Equal(t, podscope.Condition("ops"), w.MatchConditions[0], w.Name)
	}
	checkCRRMutating(t, objs.mutating(t).Webhooks[2], admissionregistrationv1.Fail, "ops")
	inKubeSystem := render(t, "--set", "webhook.enabled=true", "--set", "installation.namespace=kube-system")
	for _, w := range inKubeSystem.mutating(t).Webhooks {
		if w.Rules[0].Resources[0] != "pods" {
			continue
		}
		assert.Equal(t, podscope.NamespaceSelector("kube-system"), w.NamespaceSelector, "%s: no duplicate value", w.Name)
		assert.Equal(t, podscope.Condition("kube-system"), w.MatchConditions[0], w.Name)
	}
}
