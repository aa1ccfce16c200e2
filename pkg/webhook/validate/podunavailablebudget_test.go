package validate

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

type budgetMod func(*policyv1alpha1.PodUnavailableBudget)

func budget(name string, mods ...budgetMod) *policyv1alpha1.PodUnavailableBudget {
	one := intstr.FromInt32(1)
	b := &policyv1alpha1.PodUnavailableBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy.kruise.io/v1alpha1", Kind: "PodUnavailableBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, MaxUnavailable: &one,
		},
	}
	for _, m := range mods {
		m(b)
	}
	return b
}

func withSelector(sel *metav1.LabelSelector) budgetMod {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.Selector = sel }
}

func withTarget(apiVersion, kind, name string) budgetMod {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		b.Spec.Selector = nil
		b.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
}

func withAnnotation(k, v string) budgetMod {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[k] = v
	}
}

func withMax(v intstr.IntOrString) budgetMod {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable, b.Spec.MinAvailable = &v, nil }
}

func withMin(v intstr.IntOrString) budgetMod {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MinAvailable, b.Spec.MaxUnavailable = &v, nil }
}

func budgetRequest(t *testing.T, pub, old *policyv1alpha1.PodUnavailableBudget) *admissionv1.AdmissionRequest {
	t.Helper()
	enc := func(o any) runtime.RawExtension {
		raw, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: raw}
	}
	req := &admissionv1.AdmissionRequest{
		UID: "req-1", Operation: admissionv1.Create, Namespace: ns, Name: pub.Name,
		Kind:     metav1.GroupVersionKind{Group: policyGroup, Version: "v1alpha1", Kind: "PodUnavailableBudget"},
		Resource: metav1.GroupVersionResource{Group: policyGroup, Version: "v1alpha1", Resource: "podunavailablebudgets"},
		Object:   enc(pub),
	}
	if old != nil {
		req.Operation, req.OldObject = admissionv1.Update, enc(old)
	}
	return req
}

type budgetScope struct {
	names []string
	err   error
}

func (s *budgetScope) Include(_ context.Context, pub *policyv1alpha1.PodUnavailableBudget) error {
	s.names = append(s.names, pub.Namespace+"/"+pub.Name)
	return s.err
}

func admitBudget(t *testing.T, stored []runtime.Object, pub, old *policyv1alpha1.PodUnavailableBudget) server.Result {
	t.Helper()
	wh := PodUnavailableBudgetWebhook(kruisefake.NewSimpleClientset(stored...).PolicyV1alpha1(), true, nil)
	return wh.Admitter.Admit(context.Background(), budgetRequest(t, pub, old))
}

func TestPodUnavailableBudgetRules(t *testing.T) {
	for name, tc := range map[string]struct {
		pub    *policyv1alpha1.PodUnavailableBudget
		reason string // "" admits
		msg    string
	}{
		"selector, maxUnavailable 1":                            {pub: budget("web")},
		"targetRef, minAvailable 60%":                           {pub: budget("web", withTarget("apps.kruise.io/v1alpha1", "CloneSet", "web"), withMin(intstr.FromString("60%")))},
		"maxUnavailable 0 and 100%":                             {pub: budget("web", withMax(intstr.FromString("100%")))},
		"operations":                                            {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectOperationAnnotation, "DELETE,EVICT,UPDATE,RESIZE"))},
		"operations empty (the default; OpenKruise refuses it)": {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectOperationAnnotation, ""))},
		"kruise's switches": {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectUnreadyPodsAnnotation, "true"),
			withAnnotation(policyv1alpha1.PubBudgetPerWorkloadAnnotation, "false"), withAnnotation(policyv1alpha1.PubProtectTotalReplicasAnnotation, "-3"))},
		"an operation unknown": {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectOperationAnnotation, "DELETE,RESTART")),
			reason: ReasonInvalidBudgetAnnotation, msg: `Unsupported value: "RESTART"`},
		"an operation with a space": {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectOperationAnnotation, "DELETE, EVICT")),
			reason: ReasonInvalidBudgetAnnotation},
		"total replicas not an int32": {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectTotalReplicasAnnotation, "3000000000")),
			reason: ReasonInvalidBudgetAnnotation, msg: "protect-total-replicas"},
		"protect-unready-pods yes": {pub: budget("web", withAnnotation(policyv1alpha1.PubProtectUnreadyPodsAnnotation, "yes")),
			reason: ReasonInvalidBudgetAnnotation},
		"budget-per-workload 1": {pub: budget("web", withAnnotation(policyv1alpha1.PubBudgetPerWorkloadAnnotation, "1")),
			reason: ReasonInvalidBudgetAnnotation},
		"empty selector":    {pub: budget("web", withSelector(&metav1.LabelSelector{})), reason: ReasonInvalidSelector, msg: "empty selector"},
		"bad selector":      {pub: budget("web", withSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}})), reason: ReasonInvalidSelector},
		"neither":           {pub: budget("web", withSelector(nil)), reason: ReasonInvalidSelector},
		"both":              {pub: budget("web", withTarget("apps/v1", "Deployment", "web"), withSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}})), reason: ReasonInvalidSelector},
		"targetRef no kind": {pub: budget("web", withTarget("apps/v1", "", "web")), reason: ReasonInvalidTargetRef, msg: "spec.targetRef.kind"},
		"targetRef no name": {pub: budget("web", withTarget("apps/v1", "Deployment", "")), reason: ReasonInvalidTargetRef},
		"targetRef bad apiVersion": {pub: budget("web", withTarget("a/b/c", "Deployment", "web")), reason: ReasonInvalidTargetRef,
			msg: "spec.targetRef.apiVersion"},
		"negative":      {pub: budget("web", withMax(intstr.FromInt32(-1))), reason: ReasonInvalidBudgetCount},
		"above 100%":    {pub: budget("web", withMin(intstr.FromString("101%"))), reason: ReasonInvalidBudgetCount, msg: "100%"},
		"not a percent": {pub: budget("web", withMax(intstr.FromString("ten"))), reason: ReasonInvalidBudgetCount},
		"no count": {pub: budget("web", func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable = nil }),
			reason: ReasonInvalidBudgetCount},
	} {
		t.Run(name, func(t *testing.T) {
			res := admitBudget(t, nil, tc.pub, nil)
			if tc.reason == "" {
				assert.True(t, res.Allowed, res.Message)
				return
			}
			require.False(t, res.Allowed)
			assert.Equal(t, tc.reason, res.Reason, res.Message)
			assert.Equal(t, int32(422), res.Code)
			assert.Contains(t, res.Message, `PodUnavailableBudget.policy.kruise.io "web" is invalid`)
			assert.Contains(t, res.Message, tc.msg)
		})
	}
}

func TestPodUnavailableBudgetUpdate(t *testing.T) {
	old := budget("web", withAnnotation(policyv1alpha1.PubProtectTotalReplicasAnnotation, "x"))
	res := admitBudget(t, nil, budget("web", withMax(intstr.FromString("50%"))), old)
	assert.True(t, res.Allowed, "maxUnavailable may change; the stored object's faults are not the update's: %s", res.Message)

	res = admitBudget(t, nil, budget("web", withSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})), old)
	require.False(t, res.Allowed)
	assert.Equal(t, ReasonForbiddenUpdate, res.Reason)
	res = admitBudget(t, nil, budget("web", withTarget("apps/v1", "Deployment", "web")), budget("web", withTarget("apps/v1", "Deployment", "api")))
	require.False(t, res.Allowed)
	assert.Contains(t, res.Message, "spec.targetRef: Forbidden")
}

// Conflicts are OpenKruise's: the same workload (any version of its group), or selectors on the
// same keys that can both hold.
func TestPodUnavailableBudgetConflicts(t *testing.T) {
	sel := func(labels map[string]string, reqs ...metav1.LabelSelectorRequirement) budgetMod {
		return withSelector(&metav1.LabelSelector{MatchLabels: labels, MatchExpressions: reqs})
	}
	in := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: v}
	}
	notIn := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpNotIn, Values: v}
	}
	exists := metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpExists}
	for name, tc := range map[string]struct {
		stored, pub *policyv1alpha1.PodUnavailableBudget
		conflict    bool
	}{
		"same workload, other version": {budget("a", withTarget("apps.kruise.io/v1alpha1", "CloneSet", "web")), budget("b", withTarget("apps.kruise.io/v1beta1", "CloneSet", "web")), true},
		"same name, other kind":        {budget("a", withTarget("apps/v1", "Deployment", "web")), budget("b", withTarget("apps/v1", "StatefulSet", "web")), false},
		"same selector":                {budget("a", sel(map[string]string{"app": "web"})), budget("b", sel(map[string]string{"app": "web"})), true},
		"In that intersects":           {budget("a", sel(nil, in("app", "web", "api"))), budget("b", sel(map[string]string{"app": "api"})), true},
		"In apart":                     {budget("a", sel(nil, in("app", "web"))), budget("b", sel(nil, in("app", "db"))), false},
		"Exists and In":                {budget("a", sel(nil, exists)), budget("b", sel(map[string]string{"app": "x"})), true},
		"NotIn and In of the rest":     {budget("a", sel(nil, notIn("app", "web"))), budget("b", sel(map[string]string{"app": "web"})), false},
		"NotIn and In of another":      {budget("a", sel(nil, notIn("app", "web"))), budget("b", sel(map[string]string{"app": "db"})), true},
		"other keys (loose, as OpenKruise)": {budget("a", sel(map[string]string{"app": "web"})),
			budget("b", sel(map[string]string{"app": "web", "tier": "fe"})), false},
		"selector and targetRef": {budget("a", sel(map[string]string{"app": "web"})), budget("b", withTarget("apps/v1", "Deployment", "web")), false},
		"itself":                 {budget("a", sel(map[string]string{"app": "web"})), budget("a", sel(map[string]string{"app": "web"})), false},
	} {
		t.Run(name, func(t *testing.T) {
			res := admitBudget(t, []runtime.Object{tc.stored}, tc.pub, nil)
			assert.Equal(t, !tc.conflict, res.Allowed, res.Message)
			if tc.conflict {
				assert.Equal(t, ReasonBudgetConflict, res.Reason)
				assert.Contains(t, res.Message, "PodUnavailableBudget a")
			}
		})
	}
	other := budget("a", sel(map[string]string{"app": "web"}))
	other.Namespace = "elsewhere"
	assert.True(t, admitBudget(t, []runtime.Object{other}, budget("b", sel(map[string]string{"app": "web"})), nil).Allowed, "other namespaces never conflict")
}

// With both gates off every budget is refused; a budget admitted is routed first, unless in a
// dry run or refused; a failure to list or route admits with a warning.
func TestPodUnavailableBudgetAdmission(t *testing.T) {
	off := PodUnavailableBudgetWebhook(kruisefake.NewSimpleClientset().PolicyV1alpha1(), false, nil)
	res := off.Admitter.Admit(context.Background(), budgetRequest(t, budget("web"), nil))
	require.False(t, res.Allowed)
	assert.Equal(t, ReasonBudgetDisabled, res.Reason)
	assert.Contains(t, res.Message, "PodUnavailableBudgetDeleteGate")

	scope := &budgetScope{}
	client := kruisefake.NewSimpleClientset()
	wh := PodUnavailableBudgetWebhook(client.PolicyV1alpha1(), true, scope)
	require.True(t, wh.Admitter.Admit(context.Background(), budgetRequest(t, budget("web"), nil)).Allowed)
	dry := budgetRequest(t, budget("web"), nil)
	dry.DryRun = ptr.To(true)
	require.True(t, wh.Admitter.Admit(context.Background(), dry).Allowed)
	require.False(t, wh.Admitter.Admit(context.Background(), budgetRequest(t, budget("web", withSelector(nil)), nil)).Allowed)
	require.True(t, wh.Admitter.Admit(context.Background(), budgetRequest(t, budget("web"), budget("web"))).Allowed)
	assert.Equal(t, []string{ns + "/web"}, scope.names, "only a create, not dry, not refused")

	scope.err = errors.New("forbidden")
	res = wh.Admitter.Admit(context.Background(), budgetRequest(t, budget("web"), nil))
	require.True(t, res.Allowed)
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0], "unprotected until")

	client.PrependReactor("list", "podunavailablebudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	res = wh.Admitter.Admit(context.Background(), budgetRequest(t, budget("web"), nil))
	require.True(t, res.Allowed, "never refused for kruise's own failure")
	assert.Contains(t, res.Warnings[0], "connection refused")
}
