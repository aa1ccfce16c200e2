package sidecarinjection

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

func sidecarSetRequest(t *testing.T, op admissionv1.Operation, ss, old *appsv1beta1.SidecarSet) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(ss)
	require.NoError(t, err)
	req := &admissionv1.AdmissionRequest{
		UID: "u", Operation: op, Name: ss.Name,
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "SidecarSet"},
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "sidecarsets"},
		Object:   runtime.RawExtension{Raw: raw},
	}
	if old != nil {
		req.OldObject.Raw, err = json.Marshal(old)
		require.NoError(t, err)
	}
	return req
}

func applySidecarSetPatch(t *testing.T, req *admissionv1.AdmissionRequest, patch []byte) *appsv1beta1.SidecarSet {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	require.NoError(t, err)
	raw, err := p.Apply(req.Object.Raw)
	require.NoError(t, err)
	out := &appsv1beta1.SidecarSet{}
	require.NoError(t, json.Unmarshal(raw, out))
	return out
}

// As OpenKruise's SidecarSet webhook: the create response carries the defaulted podInjectPolicy
// of each list and the hash annotations the pods will record.
func TestSidecarSetWebhookDefaultsAndRecordsHashes(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	ss := sidecarSet("log", func(ss *appsv1beta1.SidecarSet) {
		ss.Annotations = map[string]string{"team": "a"}
		ss.Spec.InitContainers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "native", Image: "n:1", RestartPolicy: &always}}}
	})
	req := sidecarSetRequest(t, admissionv1.Create, ss, nil)
	res := SidecarSetWebhook().Admitter.Admit(context.Background(), req)
	require.True(t, res.Allowed, "%+v", res)
	require.NotEmpty(t, res.Patch)
	got := applySidecarSetPatch(t, req, res.Patch)
	assert.Equal(t, appsv1beta1.AfterAppContainerType, got.Spec.InitContainers[0].PodInjectPolicy)
	assert.Equal(t, appsv1beta1.BeforeAppContainerType, got.Spec.Containers[0].PodInjectPolicy)
	full, err := sidecarrules.Hash(got)
	require.NoError(t, err)
	noImage, err := sidecarrules.HashWithoutImage(got)
	require.NoError(t, err)
	assert.Equal(t, full, got.Annotations[sidecarrules.HashAnnotation], "the hash of the defaulted SidecarSet, as the pods record it")
	assert.Equal(t, noImage, got.Annotations[sidecarrules.HashWithoutImageAnnotation])
	assert.Equal(t, "a", got.Annotations["team"])

	// Nothing to change: no patch.
	again := sidecarSetRequest(t, admissionv1.Update, got, got)
	res = SidecarSetWebhook().Admitter.Admit(context.Background(), again)
	assert.True(t, res.Allowed)
	assert.Empty(t, res.Patch)

	// No annotations at all, on an update with stale hashes.
	bare := got.DeepCopy()
	bare.Annotations = nil
	bare.Spec.Containers[0].Image = "agent:2"
	req = sidecarSetRequest(t, admissionv1.Update, bare, got)
	res = SidecarSetWebhook().Admitter.Admit(context.Background(), req)
	require.NotEmpty(t, res.Patch)
	updated := applySidecarSetPatch(t, req, res.Patch)
	full, err = sidecarrules.Hash(updated)
	require.NoError(t, err)
	assert.Equal(t, full, updated.Annotations[sidecarrules.HashAnnotation])
	assert.Equal(t, noImage, updated.Annotations[sidecarrules.HashWithoutImageAnnotation], "an image change keeps the hash without images")
}
