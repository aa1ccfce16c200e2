package crrfill

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const ns = "default"

func runningPod(mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{gen.SetPodNamespace(ns), gen.SetPodUID("pod-uid"), gen.SetPodNodeName("node-a"),
		gen.SetPodContainers(corev1.Container{Name: "main"}, corev1.Container{Name: "sidecar"}), gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "main", ContainerID: "containerd://a", RestartCount: 1}),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "sidecar", ContainerID: "containerd://b"})}
	return gen.Pod("web", append(base, mods...)...)
}

func request(t *testing.T, obj string) *admissionv1.AdmissionRequest {
	t.Helper()
	return &admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: ns,
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "containerrecreaterequests"},
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "ContainerRecreateRequest"},
		Object:   runtime.RawExtension{Raw: []byte(obj)},
	}
}

// admit runs the webhook on obj and returns the object as patched.
func admit(t *testing.T, pods []runtime.Object, obj string) (*appsv1alpha1.ContainerRecreateRequest, bool) {
	t.Helper()
	client := fake.NewClientset(pods...)
	_, ctx := ktesting.NewTestContext(t)
	res := Webhook(client.CoreV1()).Admitter.Admit(ctx, request(t, obj))
	require.NoError(t, res.Err)
	if !res.Allowed {
		return nil, false
	}
	raw := []byte(obj)
	if len(res.Patch) > 0 {
		ops, err := jsonpatch.DecodePatch(res.Patch)
		require.NoError(t, err)
		raw, err = ops.Apply(raw)
		require.NoError(t, err)
	}
	out := &appsv1alpha1.ContainerRecreateRequest{}
	require.NoError(t, json.Unmarshal(raw, out))
	return out, true
}

const newCRR = `{"apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
	"metadata": {"name": "r", "namespace": "default"},
	"spec": {"podName": "web", "containers": [{"name": "main"}, {"name": "sidecar"}]}}`

// A request for a running pod comes back filled in: the routing labels, each
// container's instance, and failurePolicy Fail.
func TestFillsInARunningPodsRequest(t *testing.T) {
	got, ok := admit(t, []runtime.Object{runningPod()}, newCRR)
	require.True(t, ok)
	assert.Equal(t, map[string]string{
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   "pod-uid",
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: "node-a",
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}, got.Labels)
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a", RestartCount: 1}, got.Spec.Containers[0].StatusContext)
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://b"}, got.Spec.Containers[1].StatusContext)
	require.NotNil(t, got.Spec.Strategy)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, got.Spec.Strategy.FailurePolicy)

	got, ok = admit(t, []runtime.Object{runningPod()},
		`{"metadata": {"name": "r"}, "spec": {"podName": "web", "containers": [{"name": "main"}], "strategy": {"orderedRecreate": true}}}`)
	require.True(t, ok)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, got.Spec.Strategy.FailurePolicy)
	assert.True(t, got.Spec.Strategy.OrderedRecreate, "the rest of strategy is kept")

	got, ok = admit(t, []runtime.Object{runningPod()},
		`{"metadata": {"name": "r"}, "spec": {"podName": "web", "containers": [{"name": "main"}], "strategy": {"failurePolicy": "Ignore"}}}`)
	require.True(t, ok)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore, got.Spec.Strategy.FailurePolicy)
}

// Whatever the webhook cannot fill in it leaves to the validating webhook
// and the controller: it never refuses for the pod.
func TestLeavesTheRestToTheController(t *testing.T) {
	for name, pods := range map[string][]runtime.Object{
		"no pod":        nil,
		"not scheduled": {runningPod(func(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status = corev1.PodStatus{Phase: corev1.PodPending} })},
		"finished":      {runningPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
	} {
		got, ok := admit(t, pods, newCRR)
		require.True(t, ok, name)
		assert.Empty(t, got.Labels, name)
		assert.Nil(t, got.Spec.Containers[0].StatusContext, name)
		assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, got.Spec.Strategy.FailurePolicy, "%s: defaulted all the same", name)
	}

	client := fake.NewClientset(runningPod())
	client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	_, ctx := ktesting.NewTestContext(t)
	res := Webhook(client.CoreV1()).Admitter.Admit(ctx, request(t, newCRR))
	assert.True(t, res.Allowed, "a failed read admits")
}

// Fields only admission writes are refused from the creator, as
// OpenKruise's webhook refuses them.
func TestRefusesReadOnlyFields(t *testing.T) {
	client := fake.NewClientset(runningPod())
	res := Webhook(client.CoreV1()).Admitter.Admit(context.Background(), request(t,
		`{"metadata": {"name": "r"}, "spec": {"podName": "web", "containers": [{"name": "main", "statusContext": {"containerID": "containerd://old", "restartCount": 0}}, {"name": "sidecar", "ports": []}]}}`))
	assert.False(t, res.Allowed)
	assert.Equal(t, ReasonReadOnlyFieldSet, res.Reason)
	assert.EqualValues(t, http.StatusUnprocessableEntity, res.Code)
	assert.Contains(t, res.Message, `ContainerRecreateRequest.apps.kruise.io "r" is invalid`)
	assert.Contains(t, res.Message, "spec.containers[0].statusContext: Forbidden: preStop, ports and statusContext are read-only")
	assert.Contains(t, res.Message, "spec.containers[1].ports: Forbidden: preStop, ports and statusContext are read-only")
}

// Updates and other resources are never changed.
func TestOnlyCreatesOfCRRs(t *testing.T) {
	req := request(t, newCRR)
	req.Operation = admissionv1.Update
	res := Webhook(fake.NewClientset(runningPod()).CoreV1()).Admitter.Admit(context.Background(), req)
	assert.True(t, res.Allowed)
	assert.Empty(t, res.Patch)
}
