package disruption

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// call is one question put to the budget.
type call struct {
	pod    string
	op     policyv1alpha1.PubOperation
	dryRun bool
}

// fakeBudget answers every question with allowed/reason/err and records it.
type fakeBudget struct {
	allowed bool
	reason  string
	err     error
	calls   []call
}

func (f *fakeBudget) Admit(_ context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (bool, string, error) {
	f.calls = append(f.calls, call{pod: pod.Namespace + "/" + pod.Name, op: op, dryRun: dryRun})
	return f.allowed, f.reason, f.err
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return runtime.RawExtension{Raw: b}
}

func podsResource(sub string) (metav1.GroupVersionResource, string) {
	return metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, sub
}

func deleteRequest(t *testing.T, pod *corev1.Pod) *admissionv1.AdmissionRequest {
	res, _ := podsResource("")
	return &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Delete, Namespace: pod.Namespace, Name: pod.Name,
		Resource: res, OldObject: raw(t, pod)}
}

func evictRequest(t *testing.T, namespace, name string, opts *metav1.DeleteOptions) *admissionv1.AdmissionRequest {
	res, sub := podsResource("eviction")
	ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, DeleteOptions: opts}
	return &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Namespace: namespace, Name: name,
		Resource: res, SubResource: sub, Object: raw(t, ev)}
}

func updateRequest(t *testing.T, sub string, old, updated *corev1.Pod) *admissionv1.AdmissionRequest {
	res, _ := podsResource("")
	return &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Update, Namespace: old.Namespace, Name: old.Name,
		Resource: res, SubResource: sub, OldObject: raw(t, old), Object: raw(t, updated)}
}

func newWebhook(budget *fakeBudget, objs ...runtime.Object) *Webhook {
	return &Webhook{Budget: budget, Pods: LivePods{Client: fake.NewClientset(objs...).CoreV1()},
		Delete: true, Update: true, KruiseNamespace: "kruise-system"}
}

func TestAdmitAsksTheBudget(t *testing.T) {
	pod := basePod()
	image := basePod()
	image.Spec.Containers[0].Image = "nginx:2"
	cpu := basePod()
	cpu.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
	relabel := basePod()
	relabel.Labels["x"] = "y"
	for name, tc := range map[string]struct {
		req  *admissionv1.AdmissionRequest
		want []call
	}{
		"delete": {req: deleteRequest(t, pod), want: []call{{pod: "team/web-abcde", op: policyv1alpha1.PubDeleteOperation}}},
		"delete, dry run": {req: func() *admissionv1.AdmissionRequest {
			r := deleteRequest(t, pod)
			r.DryRun = ptr.To(true)
			return r
		}(), want: []call{{pod: "team/web-abcde", op: policyv1alpha1.PubDeleteOperation, dryRun: true}}},
		"eviction reads the pod": {req: evictRequest(t, "team", "web-abcde", nil),
			want: []call{{pod: "team/web-abcde", op: policyv1alpha1.PubEvictOperation}}},
		"eviction with deleteOptions.dryRun": {req: evictRequest(t, "team", "web-abcde", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}),
			want: []call{{pod: "team/web-abcde", op: policyv1alpha1.PubEvictOperation, dryRun: true}}},
		"eviction of a pod that is gone": {req: evictRequest(t, "team", "gone", nil)},
		"image update judges the old pod": {req: updateRequest(t, "", pod, image),
			want: []call{{pod: "team/web-abcde", op: policyv1alpha1.PubUpdateOperation}}},
		"resize subresource": {req: updateRequest(t, "resize", pod, cpu), want: []call{{pod: "team/web-abcde", op: policyv1alpha1.PubResizeOperation}}},
		"label update":       {req: updateRequest(t, "", pod, relabel)},
		"status update":      {req: updateRequest(t, "status", pod, image)},
		"delete of a subresource": {req: func() *admissionv1.AdmissionRequest {
			r := deleteRequest(t, pod)
			r.SubResource = "status"
			return r
		}()},
		"kube-system": {req: func() *admissionv1.AdmissionRequest {
			r := deleteRequest(t, pod)
			r.Namespace = "kube-system"
			return r
		}()},
		"kruise's namespace": {req: func() *admissionv1.AdmissionRequest {
			r := deleteRequest(t, pod)
			r.Namespace = "kruise-system"
			return r
		}()},
		"pod create": {req: func() *admissionv1.AdmissionRequest {
			r := updateRequest(t, "", pod, pod)
			r.Operation = admissionv1.Create
			return r
		}()},
	} {
		t.Run(name, func(t *testing.T) {
			budget := &fakeBudget{allowed: true}
			res := newWebhook(budget, pod).Admit(context.Background(), tc.req)
			assert.True(t, res.Allowed, res.Message)
			assert.Equal(t, tc.want, budget.calls)
		})
	}
}

// A refusal is a 429 naming the budget's reason (kubectl drain retries 429); a failure to decide
// refuses with the error.
func TestAdmitRefuses(t *testing.T) {
	pod := basePod()
	budget := &fakeBudget{reason: "PodUnavailableBudget team/web: 0 more pods may be unavailable (4 of 5 available, 4 desired)"}
	w := newWebhook(budget, pod)
	for _, req := range []*admissionv1.AdmissionRequest{deleteRequest(t, pod), evictRequest(t, "team", pod.Name, nil)} {
		res := w.Admit(context.Background(), req)
		require.False(t, res.Allowed)
		assert.Equal(t, int32(http.StatusTooManyRequests), res.Code)
		assert.Equal(t, ReasonDisruptionBudget, res.Reason)
		assert.Contains(t, res.Message, "PodUnavailableBudget team/web: 0 more pods")
		assert.Contains(t, res.Message, "team/web-abcde")
	}

	budget.err = errors.New("the budget kept changing")
	res := w.Admit(context.Background(), deleteRequest(t, pod))
	require.False(t, res.Allowed)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "the budget kept changing")
}

// An operation whose gate is off is allowed without asking; a pod that does not decode is a bad
// request.
func TestAdmitGatesAndBadRequests(t *testing.T) {
	pod := basePod()
	image := basePod()
	image.Spec.Containers[0].Image = "nginx:2"
	budget := &fakeBudget{}
	w := newWebhook(budget, pod)
	w.Delete = false
	assert.True(t, w.Admit(context.Background(), deleteRequest(t, pod)).Allowed)
	assert.True(t, w.Admit(context.Background(), evictRequest(t, "team", pod.Name, nil)).Allowed)
	assert.False(t, w.Admit(context.Background(), updateRequest(t, "", pod, image)).Allowed, "UPDATE is still judged")
	w.Delete, w.Update = true, false
	assert.True(t, w.Admit(context.Background(), updateRequest(t, "", pod, image)).Allowed)
	assert.Len(t, budget.calls, 1)

	bad := deleteRequest(t, pod)
	bad.OldObject.Raw = []byte(`{"spec":7}`)
	res := w.Admit(context.Background(), bad)
	assert.False(t, res.Allowed)
	assert.Equal(t, ReasonBadRequest, res.Reason)
	assert.Equal(t, int32(http.StatusBadRequest), res.Code)
}
