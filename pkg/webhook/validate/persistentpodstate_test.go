package validate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

func ppsObj(name, apiVersion, kind, target string) *appsv1alpha1.PersistentPodState {
	return &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"kubernetes.io/hostname"}},
		},
	}
}

func ppsReview(t *testing.T, op admissionv1.Operation, obj, old *appsv1alpha1.PersistentPodState) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	req := &admissionv1.AdmissionRequest{Operation: op, Namespace: "ns", Name: obj.Name, Object: runtime.RawExtension{Raw: raw},
		Resource: metav1.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "persistentpodstates"}}
	if old != nil {
		req.OldObject.Raw, err = json.Marshal(old)
		require.NoError(t, err)
	}
	return req
}

func TestPersistentPodStateWebhook(t *testing.T) {
	existing := ppsObj("db", "apps/v1", "StatefulSet", "db")
	wh := PersistentPodStateWebhook(kruisefake.NewSimpleClientset(existing).AppsV1alpha1())
	admit := func(op admissionv1.Operation, obj, old *appsv1alpha1.PersistentPodState) server.Result {
		return wh.Admitter.Admit(context.Background(), ppsReview(t, op, obj, old))
	}
	noTopology := ppsObj("web", "apps/v1", "StatefulSet", "web")
	noTopology.Spec.RequiredPersistentTopology = nil
	preferredOnly := ppsObj("web", "apps/v1", "StatefulSet", "web")
	preferredOnly.Spec.RequiredPersistentTopology = nil
	preferredOnly.Spec.PreferredPersistentTopology = []appsv1alpha1.PreferredTopologyTerm{{Weight: 0}}
	for _, tc := range []struct {
		name   string
		obj    *appsv1alpha1.PersistentPodState
		reason string
	}{
		{"apps/v1 StatefulSet", ppsObj("web", "apps/v1", "StatefulSet", "web"), ""},
		{"Advanced StatefulSet v1beta1", ppsObj("web", "apps.kruise.io/v1beta1", "StatefulSet", "web"), ""},
		{"Advanced StatefulSet v1alpha1", ppsObj("web", "apps.kruise.io/v1alpha1", "StatefulSet", "web"), ""},
		{"a preferred term only, even with weight 0 (admitted, as OpenKruise, with a warning)", preferredOnly, ""},
		{"no name", ppsObj("web", "apps/v1", "StatefulSet", ""), ReasonInvalidTargetRef},
		{"a Deployment", ppsObj("web", "apps/v1", "Deployment", "web"), ReasonInvalidTargetRef},
		{"a CloneSet", ppsObj("web", "apps.kruise.io/v1alpha1", "CloneSet", "web"), ReasonInvalidTargetRef},
		{"no topology", noTopology, ReasonNoTopology},
		{"a second one of a workload (another version of the group)", ppsObj("web", "apps/v2", "StatefulSet", "db"), ReasonPersistentPodStateConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := admit(admissionv1.Create, tc.obj, nil)
			assert.Equal(t, tc.reason == "", res.Allowed, res.Message)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, res.Reason)
			}
		})
	}
	res := admit(admissionv1.Create, preferredOnly, nil)
	assert.Len(t, res.Warnings, 1)

	changed := existing.DeepCopy()
	changed.Spec.TargetReference.Name = "other"
	res = admit(admissionv1.Update, changed, existing)
	assert.False(t, res.Allowed)
	assert.Equal(t, ReasonForbiddenUpdate, res.Reason)
	same := existing.DeepCopy()
	same.Spec.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted
	assert.True(t, admit(admissionv1.Update, same, existing).Allowed, "itself is no conflict; other fields may change")
}
