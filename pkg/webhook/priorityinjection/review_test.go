package priorityinjection

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/test/unit/gen"
)

var podsResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

func request(t *testing.T, op admissionv1.Operation, pod *corev1.Pod) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		UID: types.UID(requestUID), Operation: op, Resource: podsResource, Namespace: ns,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw},
	}
}

func TestReviewPatches(t *testing.T) {
	pod := gen.Pod("", gen.SetPodGenerateName("web-"), ctr("sidecar", prio("1")), ctr("main"))
	resp, reason := Review(request(t, admissionv1.Create, pod))
	assert.Empty(t, reason)
	assert.Equal(t, types.UID(requestUID), resp.UID)
	require.True(t, resp.Allowed)
	require.NotNil(t, resp.PatchType)
	assert.Equal(t, admissionv1.PatchTypeJSONPatch, *resp.PatchType)
	want, err := Mutate(Request{Namespace: ns, UID: requestUID, Pod: pod})
	require.NoError(t, err)
	raw, err := json.Marshal(want)
	require.NoError(t, err)
	assert.JSONEq(t, string(raw), string(resp.Patch), "the ConfigMap is named from the request's UID")
}

func TestReviewRefuses(t *testing.T) {
	pod := gen.Pod("", gen.SetPodGenerateName("web-"), ctr("a", prio("soon")), ctr("b"))
	resp, reason := Review(request(t, admissionv1.Create, pod))
	assert.Equal(t, ReasonInvalidPriority, reason)
	assert.False(t, resp.Allowed)
	assert.Nil(t, resp.Patch)
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusUnprocessableEntity, resp.Result.Code)
	assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
	assert.Contains(t, resp.Result.Message, `Pod "web-" is invalid: spec.containers[0].env[0].value: Invalid value: "soon"`)
}

func TestReviewLeavesOtherRequestsAlone(t *testing.T) {
	marked := webPod(ctr("a", prio("1")), ctr("b"))
	for name, req := range map[string]*admissionv1.AdmissionRequest{
		"update": request(t, admissionv1.Update, marked),
		"delete": {UID: "u", Operation: admissionv1.Delete, Resource: podsResource, Namespace: ns},
		"subresource": func() *admissionv1.AdmissionRequest {
			r := request(t, admissionv1.Create, marked)
			r.SubResource = "binding"
			return r
		}(),
		"other kind": func() *admissionv1.AdmissionRequest {
			r := request(t, admissionv1.Create, marked)
			r.Resource = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
			return r
		}(),
		"unmarked": request(t, admissionv1.Create, webPod(ctr("a"), ctr("b"))),
	} {
		resp, reason := Review(req)
		assert.True(t, resp.Allowed, name)
		assert.Empty(t, reason, name)
		assert.Nil(t, resp.Patch, name)
		assert.Nil(t, resp.PatchType, name)
	}
}

func TestReviewBadObject(t *testing.T) {
	req := request(t, admissionv1.Create, webPod())
	req.Object.Raw = []byte(`{"spec":{"containers":"nope"}}`)
	resp, reason := Review(req)
	assert.Equal(t, ReasonBadRequest, reason)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "decoding the pod")
}
