package priorityinjection

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	ns         = "default"
	requestUID = "3f6b1c2e-8a4d-4e55-9b0f-1d2c3b4a5e6f"
)

func prio(p string) corev1.EnvVar { return corev1.EnvVar{Name: lp.EnvPriority, Value: p} }

// ctr is a regular container with the env vars.
func ctr(name string, env ...corev1.EnvVar) gen.PodModifier {
	return gen.AddPodContainer(corev1.Container{Name: name, Image: name + ":1", Env: env})
}

// nativeSidecar is an init container that keeps running (restartPolicy
// Always), with the env vars.
func nativeSidecar(name string, env ...corev1.EnvVar) gen.PodModifier {
	return gen.AddPodInitContainer(corev1.Container{Name: name, Image: name + ":1", Env: env, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)})
}

var ordered = gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: lp.OrderedValue})

// webPod is pod "web" in ns with mods.
func webPod(mods ...gen.PodModifier) *corev1.Pod {
	return gen.Pod("web", append([]gen.PodModifier{gen.SetPodNamespace(ns)}, mods...)...)
}

// gated is what the container named container becomes: its env var list
// ends with the barrier of priority p in ConfigMap cm.
func gated(container, cm string, p int) gen.PodModifier {
	return func(pod *corev1.Pod) {
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == container {
				pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, lp.BarrierEnv(cm, p))
				return
			}
		}
		panic("no container " + container)
	}
}

// apply applies patch to pod as the API server does.
func apply(t *testing.T, pod *corev1.Pod, patch Patch) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(pod)
	require.NoError(t, err)
	raw, err := json.Marshal(patch)
	require.NoError(t, err)
	p, err := jsonpatch.DecodePatch(raw)
	require.NoError(t, err, "%s", raw)
	out, err := p.Apply(doc)
	require.NoError(t, err, "%s", raw)
	got := &corev1.Pod{}
	require.NoError(t, json.Unmarshal(out, got))
	return got
}

func TestMutatePatches(t *testing.T) {
	generated := lp.GeneratedBarrierName("web-6d4cf56db6-", requestUID)
	cases := []struct {
		name      string
		namespace string // of the request; ns when empty
		pod       *corev1.Pod
		// want is the pod after the patch; nil: no patch.
		want *corev1.Pod
	}{
		{
			name: "two levels: the container of priority 0 waits for key p_0",
			pod:  webPod(ctr("sidecar", prio("1")), ctr("main")),
			want: webPod(ctr("sidecar", prio("1")), ctr("main"), gated("main", "web-barrier", 0)),
		},
		{
			name: "three levels; a container with env vars gets the barrier appended",
			pod: webPod(ctr("db", prio("10")), ctr("cache", prio("5"), corev1.EnvVar{Name: "MODE", Value: "lru"}),
				ctr("app", corev1.EnvVar{Name: "PORT", Value: "80"})),
			want: webPod(ctr("db", prio("10")), ctr("cache", prio("5"), corev1.EnvVar{Name: "MODE", Value: "lru"}),
				ctr("app", corev1.EnvVar{Name: "PORT", Value: "80"}), gated("cache", "web-barrier", 5), gated("app", "web-barrier", 0)),
		},
		{
			name: "the highest priority need not come first; two containers share a level",
			pod:  webPod(ctr("app", prio("-1")), ctr("worker", prio("-1")), ctr("proxy", prio("2")), ctr("agent", prio("2"))),
			want: webPod(ctr("app", prio("-1")), ctr("worker", prio("-1")), ctr("proxy", prio("2")), ctr("agent", prio("2")),
				gated("app", "web-barrier", -1), gated("worker", "web-barrier", -1)),
		},
		{
			name: "Ordered: spec order, p_-1 and p_-2",
			pod:  webPod(ordered, ctr("a"), ctr("b"), ctr("c")),
			want: webPod(ordered, ctr("a"), ctr("b"), ctr("c"), gated("b", "web-barrier", -1), gated("c", "web-barrier", -2)),
		},
		{
			name: "Ordered overrides the env priorities (as OpenKruise)",
			pod:  webPod(ordered, ctr("a", prio("1")), ctr("b", prio("9"))),
			want: webPod(ordered, ctr("a", prio("1")), ctr("b", prio("9")), gated("b", "web-barrier", -1)),
		},
		{
			name: "the seed's Job example: the sidecar first, then main",
			pod: webPod(gen.SetPodRestartPolicy(corev1.RestartPolicyNever),
				ctr("sidecar", corev1.EnvVar{Name: "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", Value: "true"}, prio("1")), ctr("main")),
			want: webPod(gen.SetPodRestartPolicy(corev1.RestartPolicyNever),
				ctr("sidecar", corev1.EnvVar{Name: "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", Value: "true"}, prio("1")), ctr("main"),
				gated("main", "web-barrier", 0)),
		},
		{
			name: "native sidecars are left alone; they start before every regular container anyway",
			pod:  webPod(nativeSidecar("mesh", prio("100")), ctr("app", prio("1")), ctr("job")),
			want: webPod(nativeSidecar("mesh", prio("100")), ctr("app", prio("1")), ctr("job"), gated("job", "web-barrier", 0)),
		},
		{
			name: "generateName: the ConfigMap is named from the generateName and the request",
			pod:  gen.Pod("", gen.SetPodGenerateName("web-6d4cf56db6-"), ctr("sidecar", prio("1")), ctr("main")),
			want: gen.Pod("", gen.SetPodGenerateName("web-6d4cf56db6-"), ctr("sidecar", prio("1")), ctr("main"), gated("main", generated, 0)),
		},
		{
			name: "name and generateName: the name wins, as in the API server",
			pod:  webPod(gen.SetPodGenerateName("web-"), ctr("sidecar", prio("1")), ctr("main")),
			want: webPod(gen.SetPodGenerateName("web-"), ctr("sidecar", prio("1")), ctr("main"), gated("main", "web-barrier", 0)),
		},
		{
			name: "extreme priorities",
			pod:  webPod(ctr("a", prio("2147483647")), ctr("b", prio("-2147483648"))),
			want: webPod(ctr("a", prio("2147483647")), ctr("b", prio("-2147483648")), gated("b", "web-barrier", lp.MinPriority)),
		},
		{name: "one priority for all: nothing to order", pod: webPod(ctr("a", prio("3")), ctr("b", prio("3")))},
		{name: "an explicit 0 is the default", pod: webPod(ctr("a", prio("0")), ctr("b"))},
		{name: "one container", pod: webPod(ctr("a", prio("3")))},
		{name: "Ordered, one container", pod: webPod(ordered, ctr("a"))},
		{name: "not marked", pod: webPod(ctr("a"), ctr("b", corev1.EnvVar{Name: "X", Value: "1"}))},
		{name: "marked only in a native sidecar", pod: webPod(nativeSidecar("mesh", prio("1")), ctr("a"), ctr("b"))},
		{name: "neither name nor generateName: the API server refuses it", pod: gen.Pod("", ctr("a", prio("1")), ctr("b"))},
		{
			name: "kube-system is left alone, even what would be refused", namespace: metav1.NamespaceSystem,
			pod: webPod(gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: "bogus"}), ctr("a", prio("x")),
				ctr("b", corev1.EnvVar{Name: lp.EnvBarrier, Value: "go"})),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			namespace := tc.namespace
			if namespace == "" {
				namespace = ns
			}
			before := tc.pod.DeepCopy()
			patch, err := Mutate(Request{Namespace: namespace, UID: requestUID, Pod: tc.pod})
			require.NoError(t, err)
			assert.Equal(t, before, tc.pod, "Mutate does not change its argument")
			if tc.want == nil {
				assert.Empty(t, patch)
				return
			}
			got := apply(t, tc.pod, patch)
			assert.Equal(t, tc.want, got)

			// Called again on its own output (reinvocation), Mutate accepts
			// its barriers and adds nothing.
			again, err := Mutate(Request{Namespace: namespace, UID: requestUID, Pod: got})
			require.NoError(t, err)
			assert.Empty(t, again)
		})
	}
}

// A pod whose namespace is only in the request is still recognised as
// kube-system's; one whose request has none falls back to the pod's.
func TestMutateNamespaceFromPod(t *testing.T) {
	pod := gen.Pod("web", gen.SetPodNamespace(metav1.NamespaceSystem), ctr("a", prio("1")), ctr("b"))
	patch, err := Mutate(Request{UID: requestUID, Pod: pod})
	require.NoError(t, err)
	assert.Empty(t, patch)
}

func TestMutateJSONPatchShape(t *testing.T) {
	patch, err := Mutate(Request{Namespace: ns, UID: requestUID, Pod: webPod(ctr("a", prio("1")), ctr("b"), ctr("c", prio("-1"), corev1.EnvVar{Name: "X", Value: "y"}))})
	require.NoError(t, err)
	raw, err := json.Marshal(patch)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"op":"add","path":"/spec/containers/1/env","value":[{"name":"KRUISE_CONTAINER_BARRIER","valueFrom":{"configMapKeyRef":{"name":"web-barrier","key":"p_0"}}}]},
		{"op":"add","path":"/spec/containers/2/env/-","value":{"name":"KRUISE_CONTAINER_BARRIER","valueFrom":{"configMapKeyRef":{"name":"web-barrier","key":"p_-1"}}}}
	]`, string(raw))
}

func TestMutateRefuses(t *testing.T) {
	userBarrier := corev1.EnvVar{Name: lp.EnvBarrier, Value: "go"}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		reason  Reason
		details []string // substrings of the refusal, in order
	}{
		{
			name: "a user-set barrier", pod: webPod(ctr("a", prio("1")), ctr("b", userBarrier)), reason: ReasonBarrierSet,
			details: []string{`spec.containers[1].env[0]: Forbidden: container "b": KRUISE_CONTAINER_BARRIER is reserved`},
		},
		{
			name: "a user-set barrier on a pod that needs none", pod: webPod(ctr("a", userBarrier)), reason: ReasonBarrierSet,
			details: []string{`spec.containers[0].env[0]: Forbidden`},
		},
		{
			// Well formed, but not what kruise would add: the pod would wait
			// on a ConfigMap no controller writes.
			name: "a barrier from another ConfigMap", reason: ReasonBarrierSet,
			pod:     webPod(ctr("a", prio("1")), ctr("b", lp.BarrierEnv("mine", 0))),
			details: []string{`spec.containers[1].env[0]: Forbidden`},
		},
		{
			name: "a barrier on the container of highest priority", reason: ReasonBarrierSet,
			pod:     webPod(ctr("a", prio("1"), lp.BarrierEnv("web-barrier", 0)), ctr("b")),
			details: []string{`spec.containers[0].env[1]: Forbidden`},
		},
		{
			name: "not an integer", pod: webPod(ctr("a", prio("high")), ctr("b")), reason: ReasonInvalidPriority,
			details: []string{`spec.containers[0].env[0].value: Invalid value: "high": container "a": KRUISE_CONTAINER_PRIORITY must be an integer between -2147483648 and 2147483647`},
		},
		{
			name: "out of range", pod: webPod(ctr("a", prio("9223372036854775808")), ctr("b")), reason: ReasonInvalidPriority,
			details: []string{`Invalid value: "9223372036854775808"`},
		},
		{
			name: "from a ConfigMap", reason: ReasonInvalidPriority,
			pod: webPod(ctr("a", corev1.EnvVar{Name: lp.EnvPriority, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "prios"}, Key: "a"}}}), ctr("b")),
			details: []string{`spec.containers[0].env[0].valueFrom: Forbidden: container "a": KRUISE_CONTAINER_PRIORITY must be a literal integer`},
		},
		{
			name: "an annotation value other than Ordered", reason: ReasonInvalidAnnotation,
			pod:     webPod(gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: "ordered"}), ctr("a"), ctr("b")),
			details: []string{`metadata.annotations[apps.kruise.io/container-launch-priority]: Unsupported value: "ordered": supported values: "Ordered"`},
		},
		{
			name: "every problem is listed, the annotation's first", reason: ReasonInvalidAnnotation,
			pod: webPod(gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: "Reverse"}), ctr("a", prio("1.0")),
				ctr("b", userBarrier)),
			details: []string{`Unsupported value: "Reverse"`, `Invalid value: "1.0"`, `spec.containers[1].env[0]: Forbidden`},
		},
		{
			name: "generateName: a barrier naming the pod's future ConfigMap cannot be guessed", reason: ReasonBarrierSet,
			pod: gen.Pod("", gen.SetPodGenerateName("web-"), ctr("a", prio("1")),
				ctr("b", lp.BarrierEnv(lp.GeneratedBarrierName("web-", "another-request"), 0))),
			details: []string{`spec.containers[1].env[0]: Forbidden`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := Mutate(Request{Namespace: ns, UID: requestUID, Pod: tc.pod})
			assert.Empty(t, patch)
			var r *Refusal
			require.ErrorAs(t, err, &r)
			assert.Equal(t, tc.reason, r.Reason)
			require.Len(t, r.Errors, len(tc.details), "%v", r.Errors)
			for i, d := range tc.details {
				assert.Contains(t, r.Errors[i].Error(), d)
			}
			assert.Contains(t, err.Error(), "container launch priority: ")
			st := r.Status("web")
			assert.EqualValues(t, 422, st.Code)
			assert.Len(t, st.Details.Causes, len(tc.details))
		})
	}
}
