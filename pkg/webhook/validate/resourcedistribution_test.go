package validate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func validRD(resource string) *appsv1alpha1.ResourceDistribution {
	return &appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: "dist"},
		Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: []byte(resource)},
			Targets: appsv1alpha1.ResourceDistributionTargets{
				IncludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: []appsv1alpha1.ResourceDistributionNamespace{{Name: "a"}}},
				ExcludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: []appsv1alpha1.ResourceDistributionNamespace{{Name: "b"}}},
			},
		},
	}
}

const rdSecret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"data":{"k":"dg=="}}`

func admitRD(t *testing.T, client *fake.Clientset, on bool, rd, old *appsv1alpha1.ResourceDistribution) (bool, string, string) {
	t.Helper()
	req := request(t, "resourcedistributions", "ResourceDistribution", rd, "v1alpha1")
	req.Namespace = ""
	if old != nil {
		raw, err := json.Marshal(old)
		require.NoError(t, err)
		req.Operation, req.OldObject = admissionv1.Update, runtime.RawExtension{Raw: raw}
	}
	res := ResourceDistributionWebhook(client, "kruise-system", on).Admitter.Admit(context.Background(), req)
	require.NoError(t, res.Err)
	return res.Allowed, res.Reason, res.Message
}

func TestResourceDistributionRules(t *testing.T) {
	tests := map[string]struct {
		mutate  func(*appsv1alpha1.ResourceDistribution)
		reason  string
		message string
	}{
		"valid": {func(*appsv1alpha1.ResourceDistribution) {}, "", ""},
		"valid configmap": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"a":"b"}}`)
		}, "", ""},
		"empty resource": {func(r *appsv1alpha1.ResourceDistribution) { r.Spec.Resource.Raw = nil }, ReasonInvalidResource, "empty resource"},
		"a pod": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`)
		}, ReasonInvalidResource, "spec.resource.kind"},
		"another group's ConfigMap": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Resource.Raw = []byte(`{"apiVersion":"x.io/v1","kind":"ConfigMap","metadata":{"name":"p"}}`)
		}, ReasonInvalidResource, "spec.resource.kind"},
		"no name": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{}}`)
		}, ReasonInvalidResource, "spec.resource.metadata.name"},
		"bad name": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"Bad_Name"}}`)
		}, ReasonInvalidResource, "spec.resource.metadata.name"},
		"data not base64": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Resource.Raw = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"!!"}}`)
		}, ReasonInvalidResource, "does not read as a Secret"},
		"included and excluded": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.ExcludedNamespaces.List = append(r.Spec.Targets.ExcludedNamespaces.List, appsv1alpha1.ResourceDistributionNamespace{Name: "a"})
		}, ReasonInvalidTargets, "ambiguous targets"},
		"bad included name": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.IncludedNamespaces.List[0].Name = "Not.A.Namespace"
		}, ReasonInvalidTargets, "spec.targets.includedNamespaces.list[0].name"},
		"bad excluded name": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.ExcludedNamespaces.List[0].Name = "-x"
		}, ReasonInvalidTargets, "spec.targets.excludedNamespaces.list[0].name"},
		"bad selector": {func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.NamespaceLabelSelector.MatchLabels = map[string]string{"a": "b c"}
		}, ReasonInvalidTargets, "spec.targets.namespaceLabelSelector"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rd := validRD(rdSecret)
			tc.mutate(rd)
			allowed, reason, msg := admitRD(t, fake.NewClientset(), true, rd, nil)
			assert.Equal(t, tc.reason == "", allowed, msg)
			assert.Equal(t, tc.reason, reason)
			assert.Contains(t, msg, tc.message)
		})
	}
}

func TestResourceDistributionOffRefusesAll(t *testing.T) {
	allowed, reason, msg := admitRD(t, fake.NewClientset(), false, validRD(rdSecret), nil)
	assert.False(t, allowed)
	assert.Equal(t, ReasonResourceDistributionDisabled, reason)
	assert.Contains(t, msg, "ResourceDistributionGate")
}

func TestResourceDistributionResourceIdentityImmutable(t *testing.T) {
	old := validRD(rdSecret)
	for name, raw := range map[string]string{
		"renamed":  `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"other"}}`,
		"rekinded": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"creds"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			allowed, reason, msg := admitRD(t, fake.NewClientset(), true, validRD(raw), old)
			assert.False(t, allowed)
			assert.Equal(t, ReasonInvalidResource, reason)
			assert.Contains(t, msg, "immutable")
		})
	}
	// Data may change.
	allowed, _, msg := admitRD(t, fake.NewClientset(), true, validRD(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"data":{"k":"dw=="}}`), old)
	assert.True(t, allowed, msg)
}

// The content is checked by a dry-run create in kruise's namespace: what the API server refuses
// is refused, an existing object of the name is no objection, and nothing is written.
func TestResourceDistributionDryRun(t *testing.T) {
	client := fake.NewClientset()
	var seen []k8stesting.CreateAction
	client.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		seen = append(seen, ca)
		if ca.GetObject().(*corev1.Secret).Type == "bad" {
			return true, nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Secret").GroupKind(), "creds", nil)
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "creds")
	})
	allowed, _, msg := admitRD(t, client, true, validRD(rdSecret), nil)
	assert.True(t, allowed, msg)
	require.Len(t, seen, 1)
	assert.Equal(t, "kruise-system", seen[0].GetNamespace())
	assert.Equal(t, []string{metav1.DryRunAll}, seen[0].(k8stesting.CreateActionImpl).CreateOptions.DryRun)

	allowed, reason, msg := admitRD(t, client, true, validRD(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"type":"bad"}`), nil)
	assert.False(t, allowed)
	assert.Equal(t, ReasonInvalidResource, reason)
	assert.Contains(t, msg, "dry-run")
}
