package ejobrequester

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
)

func request(t *testing.T, op admissionv1.Operation, job *appsv1alpha1.EphemeralJob, user string) *admissionv1.AdmissionRequest {
	raw, err := json.Marshal(job)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		Operation: op, Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "ephemeraljobs"},
		Object: runtime.RawExtension{Raw: raw}, UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"dev"}},
	}
}

func apply(t *testing.T, job *appsv1alpha1.EphemeralJob, patch []byte) *appsv1alpha1.EphemeralJob {
	raw, _ := json.Marshal(job)
	p, err := jsonpatch.DecodePatch(patch)
	require.NoError(t, err)
	out, err := p.Apply(raw)
	require.NoError(t, err)
	got := &appsv1alpha1.EphemeralJob{}
	require.NoError(t, json.Unmarshal(out, got))
	return got
}

// A forged requester is overwritten by the user who sent the request, at create and update.
func TestStampsRequester(t *testing.T) {
	forged := ejobaccess.Requester{Username: "admin", Groups: []string{"system:masters"}}.Encode()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
	}{{"none", nil}, {"forged", map[string]string{ejobaccess.RequesterAnnotation: forged, "other": "kept"}}} {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			job := &appsv1alpha1.EphemeralJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Annotations: tc.annotations}}
			res := admit(context.Background(), request(t, op, job, "alice"))
			require.True(t, res.Allowed, tc.name)
			got := apply(t, job, res.Patch)
			r, err := ejobaccess.FromAnnotations(got.Annotations)
			require.NoError(t, err)
			assert.Equal(t, ejobaccess.Requester{Username: "alice", Groups: []string{"dev"}}, r, "%s %s", tc.name, op)
			if tc.annotations != nil {
				assert.Equal(t, "kept", got.Annotations["other"])
			}
		}
	}
}

func TestDefaultsContainers(t *testing.T) {
	job := &appsv1alpha1.EphemeralJob{Spec: appsv1alpha1.EphemeralJobSpec{Template: appsv1alpha1.EphemeralContainerTemplateSpec{
		EphemeralContainers: []corev1.EphemeralContainer{
			{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "a", Image: "busybox:1.36"}},
			{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "b", Image: "busybox"}},
			{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullNever,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}},
		}}}}
	res := admit(context.Background(), request(t, admissionv1.Create, job, "alice"))
	got := apply(t, job, res.Patch).Spec.Template.EphemeralContainers
	assert.Equal(t, corev1.PullIfNotPresent, got[0].ImagePullPolicy)
	assert.Equal(t, corev1.PullAlways, got[1].ImagePullPolicy)
	assert.Equal(t, corev1.PullNever, got[2].ImagePullPolicy)
	assert.Equal(t, corev1.TerminationMessageReadFile, got[0].TerminationMessagePolicy)
	assert.Equal(t, corev1.TerminationMessageFallbackToLogsOnError, got[2].TerminationMessagePolicy)
}

func TestOtherRequestsUntouched(t *testing.T) {
	req := request(t, admissionv1.Update, &appsv1alpha1.EphemeralJob{}, "alice")
	req.SubResource = "status"
	assert.Empty(t, admit(context.Background(), req).Patch)
	req = request(t, admissionv1.Delete, &appsv1alpha1.EphemeralJob{}, "alice")
	assert.Empty(t, admit(context.Background(), req).Patch)
}
