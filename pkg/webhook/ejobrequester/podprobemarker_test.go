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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

func ppmRequest(t *testing.T, op admissionv1.Operation, raw []byte, user string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		Operation: op, Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "podprobemarkers"},
		Object: runtime.RawExtension{Raw: raw}, UserInfo: authenticationv1.UserInfo{Username: user, UID: "u", Groups: []string{"dev"}},
	}
}

// A forged requester is overwritten by the user who sent the request, at create and update, with
// or without annotations, and the other annotations are kept.
func TestStampsPodProbeMarkerRequester(t *testing.T) {
	forged := ejobaccess.Requester{Username: "admin", Groups: []string{"system:masters"}}.Encode()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
	}{{"none", nil}, {"empty", map[string]string{}}, {"forged", map[string]string{nodeprobe.RequesterAnnotation: forged, "other": "kept"}}} {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			ppm := &appsv1alpha1.PodProbeMarker{ObjectMeta: metav1.ObjectMeta{Name: "m", Annotations: tc.annotations}}
			raw, err := json.Marshal(ppm)
			require.NoError(t, err)
			res := admitPodProbeMarker(context.Background(), ppmRequest(t, op, raw, "alice"))
			require.True(t, res.Allowed, tc.name)
			p, err := jsonpatch.DecodePatch(res.Patch)
			require.NoError(t, err)
			out, err := p.Apply(raw)
			require.NoError(t, err)
			got := &appsv1alpha1.PodProbeMarker{}
			require.NoError(t, json.Unmarshal(out, got))
			r, err := nodeprobe.RequesterOf(got.Annotations)
			require.NoError(t, err)
			assert.Equal(t, ejobaccess.Requester{Username: "alice", UID: "u", Groups: []string{"dev"}}, r, "%s %s", tc.name, op)
			_, ejob := got.Annotations[ejobaccess.RequesterAnnotation]
			assert.False(t, ejob, "the PodProbeMarker's own key")
			if tc.name == "forged" {
				assert.Equal(t, "kept", got.Annotations["other"])
			}
		}
	}
}

// A spec that does not decode as a PodProbeMarker's is stamped all the same (the validating
// webhook refuses it); a body that is not JSON is an error; other requests pass untouched.
func TestPodProbeMarkerRequesterEdges(t *testing.T) {
	res := admitPodProbeMarker(context.Background(), ppmRequest(t, admissionv1.Create, []byte(`{"metadata":{"name":"m"},"spec":{"probes":7}}`), "alice"))
	require.True(t, res.Allowed)
	assert.NotEmpty(t, res.Patch)
	res = admitPodProbeMarker(context.Background(), ppmRequest(t, admissionv1.Create, []byte(`{`), "alice"))
	assert.False(t, res.Allowed)

	req := ppmRequest(t, admissionv1.Update, []byte(`{}`), "alice")
	req.SubResource = "status"
	assert.Empty(t, admitPodProbeMarker(context.Background(), req).Patch)
	req = ppmRequest(t, admissionv1.Delete, []byte(`{}`), "alice")
	assert.Empty(t, admitPodProbeMarker(context.Background(), req).Patch)
	req = ppmRequest(t, admissionv1.Create, []byte(`{}`), "alice")
	req.Resource.Resource = "ephemeraljobs"
	assert.Empty(t, admitPodProbeMarker(context.Background(), req).Patch)
}
