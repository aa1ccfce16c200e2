package livenessinjection

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	optIn    = gen.AddPodAnnotations(map[string]string{appsv1alpha1.UsingEnhancedLivenessAnnotation: "true"})
	cloneSet = gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs", Controller: ptr.To(true)})
)

func probe(port int32) *corev1.Probe {
	return &corev1.Probe{PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstrInt(port)}}}
}

func ctr(name string, liveness *corev1.Probe) gen.PodModifier {
	return gen.AddPodContainer(corev1.Container{Name: name, Image: name + ":1", LivenessProbe: liveness,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"ready"}}}}})
}

func webPod(mods ...gen.PodModifier) *corev1.Pod {
	return gen.Pod("web-1", append([]gen.PodModifier{gen.SetPodNamespace("default")}, mods...)...)
}

func apply(t *testing.T, pod *corev1.Pod, ops []Operation) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(pod)
	require.NoError(t, err)
	raw, err := json.Marshal(ops)
	require.NoError(t, err)
	p, err := jsonpatch.DecodePatch(raw)
	require.NoError(t, err)
	out, err := p.Apply(doc)
	require.NoError(t, err, "%s", raw)
	got := &corev1.Pod{}
	require.NoError(t, json.Unmarshal(out, got))
	return got
}

func TestApplies(t *testing.T) {
	ref := func(apiVersion string, controller bool) gen.PodModifier {
		return gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: apiVersion, Kind: "X", Name: "x", UID: "u", Controller: ptr.To(controller)})
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"CloneSet, annotated", webPod(optIn, cloneSet), true},
		{"Advanced StatefulSet v1beta1", webPod(optIn, ref("apps.kruise.io/v1beta1", true)), true},
		{"not annotated", webPod(cloneSet), false},
		{"annotated other than true", webPod(gen.AddPodAnnotations(map[string]string{appsv1alpha1.UsingEnhancedLivenessAnnotation: "True"}), cloneSet), false},
		{"no owner", webPod(optIn), false},
		{"a built-in ReplicaSet", webPod(optIn, ref("apps/v1", true)), false},
		{"a look-alike group", webPod(optIn, ref("apps.kruise.io.evil/v1", true)), false},
		{"kruise owner that is not the controller", webPod(optIn, ref("apps.kruise.io/v1alpha1", false)), false},
	} {
		assert.Equal(t, tc.want, Applies(tc.pod), tc.name)
	}
}

func TestMutateMovesEveryLivenessProbe(t *testing.T) {
	pod := webPod(optIn, cloneSet, ctr("app", probe(80)), ctr("plain", nil), ctr("sidecar", probe(9000)),
		gen.AddPodInitContainer(corev1.Container{Name: "init", Image: "i:1"}))
	before := pod.DeepCopy()
	ops, err := Mutate(pod)
	require.NoError(t, err)
	assert.Equal(t, before, pod, "Mutate does not change its argument")
	got := apply(t, pod, ops)

	for _, c := range got.Spec.Containers {
		assert.Nil(t, c.LivenessProbe, c.Name)
		assert.NotNil(t, c.ReadinessProbe, "%s: only liveness moves", c.Name)
	}
	ctx, err := nodeprobe.ReadProbeContext(got.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	require.NoError(t, err)
	assert.Equal(t, []nodeprobe.ContainerLiveness{{Name: "app", LivenessProbe: probe(80)}, {Name: "sidecar", LivenessProbe: probe(9000)}}, ctx)
	assert.Equal(t, "true", got.Annotations[appsv1alpha1.UsingEnhancedLivenessAnnotation])

	again, err := Mutate(got)
	require.NoError(t, err)
	assert.Empty(t, again, "idempotent: nothing to move the second time, the context stays")
}

func TestMutateLeavesOthersAlone(t *testing.T) {
	for name, pod := range map[string]*corev1.Pod{
		"not annotated":     webPod(cloneSet, ctr("app", probe(80))),
		"not kruise's":      webPod(optIn, ctr("app", probe(80))),
		"no liveness probe": webPod(optIn, cloneSet, ctr("app", nil)),
	} {
		ops, err := Mutate(pod)
		require.NoError(t, err)
		assert.Empty(t, ops, name)
	}
}

// A sidecar injected after the first call (the webhook reinvoked): its probe joins the context,
// the first container's entry stays.
func TestMutateReinvokedAfterAnInjection(t *testing.T) {
	pod := webPod(optIn, cloneSet, ctr("app", probe(80)))
	ops, err := Mutate(pod)
	require.NoError(t, err)
	got := apply(t, pod, ops)
	got.Spec.Containers = append(got.Spec.Containers, corev1.Container{Name: "mesh", Image: "mesh:1", LivenessProbe: probe(15000)})
	ops, err = Mutate(got)
	require.NoError(t, err)
	got = apply(t, got, ops)
	ctx, err := nodeprobe.ReadProbeContext(got.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	require.NoError(t, err)
	assert.Equal(t, []nodeprobe.ContainerLiveness{{Name: "app", LivenessProbe: probe(80)}, {Name: "mesh", LivenessProbe: probe(15000)}}, ctx)
	assert.Nil(t, got.Spec.Containers[1].LivenessProbe)
}

// Entries of a context written with the pod for containers it does not have, or that have a
// livenessProbe of their own, are replaced by what the pod really has.
func TestMutateOverwritesAUserContext(t *testing.T) {
	pod := webPod(optIn, cloneSet, gen.AddPodAnnotations(map[string]string{appsv1alpha1.ContainerProbeContextAnnotation: `[{"name":"ghost"}]`}),
		ctr("app", probe(80)))
	ops, err := Mutate(pod)
	require.NoError(t, err)
	got := apply(t, pod, ops)
	ctx, err := nodeprobe.ReadProbeContext(got.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	require.NoError(t, err)
	assert.Equal(t, []nodeprobe.ContainerLiveness{{Name: "app", LivenessProbe: probe(80)}}, ctx)
}

func TestExpressionText(t *testing.T) {
	assert.True(t, strings.HasPrefix(Expression, "object != null && "))
	assert.Contains(t, Expression, "'"+appsv1alpha1.UsingEnhancedLivenessAnnotation+"'")
	assert.Contains(t, Expression, "== 'true'")
	conds := MatchConditions("kruise-system")
	require.Len(t, conds, 2)
	assert.Equal(t, podscope.Condition("kruise-system"), conds[0])
	assert.Equal(t, Expression, conds[1].Expression)
}

// serve sends a pod create to the webhook mounted on a webhook server.
func serve(t *testing.T, namespace string, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	t.Helper()
	srv, err := server.New(server.Options{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("no TLS in this test")
	}})
	require.NoError(t, err)
	require.NoError(t, srv.HandleAdmission(Webhook("kruise-system")))
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "req-1", Operation: admissionv1.Create, Namespace: namespace,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}},
	})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	return out.Response
}

func TestWebhookPatches(t *testing.T) {
	pod := webPod(optIn, cloneSet, ctr("app", probe(80)))
	got := serve(t, "default", pod)
	require.True(t, got.Allowed)
	require.NotNil(t, got.PatchType)
	var ops []Operation
	require.NoError(t, json.Unmarshal(got.Patch, &ops))
	assert.Nil(t, apply(t, pod, ops).Spec.Containers[0].LivenessProbe)

	for _, ns := range []string{"kube-system", "kruise-system"} {
		got := serve(t, ns, pod)
		assert.True(t, got.Allowed, ns)
		assert.Nil(t, got.Patch, ns)
	}
	got = serve(t, "default", webPod(cloneSet, ctr("app", probe(80))))
	assert.True(t, got.Allowed)
	assert.Nil(t, got.Patch)
}

func intstrInt(p int32) intstr.IntOrString { return intstr.FromInt32(p) }
