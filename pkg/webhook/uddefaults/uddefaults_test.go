package uddefaults

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func request(op admissionv1.Operation, raw string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		Operation: op,
		Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "uniteddeployments"},
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "UnitedDeployment"},
		Object:    runtime.RawExtension{Raw: []byte(raw)},
	}
}

// TestDefaultsPatch applies the webhook's patch as the API server does and checks the result.
func TestDefaultsPatch(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{{
		name: "no updateStrategy: added whole",
		in:   `{"spec":{"selector":{"matchLabels":{"a":"b"}}}}`,
		want: `{"spec":{"selector":{"matchLabels":{"a":"b"}},"revisionHistoryLimit":10,"updateStrategy":{"type":"Manual","manualUpdate":{}}}}`,
	}, {
		name: "updateStrategy with partitions only: type added",
		in:   `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"manualUpdate":{"partitions":{"a":1}}}}}`,
		want: `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"type":"Manual","manualUpdate":{"partitions":{"a":1}}}}}`,
	}, {
		name: "updateStrategy type only: manualUpdate added",
		in:   `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"type":"Manual"}}}`,
		want: `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"type":"Manual","manualUpdate":{}}}}`,
	}, {
		name: "min/max subsets get minReplicas 0",
		in: `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"type":"Manual","manualUpdate":{}},` +
			`"topology":{"subsets":[{"name":"a","maxReplicas":2},{"name":"b","minReplicas":"10%"},{"name":"c"}]}}}`,
		want: `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"type":"Manual","manualUpdate":{}},` +
			`"topology":{"subsets":[{"name":"a","maxReplicas":2,"minReplicas":0},{"name":"b","minReplicas":"10%"},{"name":"c","minReplicas":0}]}}}`,
	}, {
		name: "fully defaulted: no patch",
		in:   `{"spec":{"revisionHistoryLimit":2,"updateStrategy":{"type":"Manual","manualUpdate":{}}}}`,
	}, {
		name: "no spec: no patch (refused by the validating webhook)",
		in:   `{"metadata":{"name":"x"}}`,
	}, {
		name: "undecodable: no patch (refused by the validating webhook)",
		in:   `{"spec":{"replicas":"x"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				res := admit(context.Background(), request(op, tc.in))
				require.True(t, res.Allowed)
				if tc.want == "" {
					assert.Empty(t, res.Patch)
					continue
				}
				p, err := jsonpatch.DecodePatch(res.Patch)
				require.NoError(t, err)
				out, err := p.Apply([]byte(tc.in))
				require.NoError(t, err)
				assert.JSONEq(t, tc.want, string(out))
			}
		})
	}
}

func TestOtherRequestsUntouched(t *testing.T) {
	raw := `{"spec":{"selector":{}}}`
	for _, req := range []*admissionv1.AdmissionRequest{
		func() *admissionv1.AdmissionRequest { r := request(admissionv1.Delete, raw); return r }(),
		func() *admissionv1.AdmissionRequest {
			r := request(admissionv1.Update, raw)
			r.SubResource = "scale"
			return r
		}(),
		func() *admissionv1.AdmissionRequest {
			r := request(admissionv1.Create, raw)
			r.Resource.Resource = "clonesets"
			return r
		}(),
	} {
		res := admit(context.Background(), req)
		assert.True(t, res.Allowed)
		assert.Empty(t, res.Patch)
	}
}
