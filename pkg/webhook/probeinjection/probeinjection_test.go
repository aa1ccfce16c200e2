package probeinjection

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

const ns = "team"

func marker(name, requester string, sel map[string]string, probes ...appsv1alpha1.PodContainerProbe) *appsv1alpha1.PodProbeMarker {
	m := &appsv1alpha1.PodProbeMarker{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.PodProbeMarkerSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Probes: probes}}
	if requester != "" {
		m.Annotations = map[string]string{nodeprobe.RequesterAnnotation: ejobaccess.Requester{Username: requester}.Encode()}
	}
	return m
}

func probe(name, container, condition string, exec bool) appsv1alpha1.PodContainerProbe {
	p := appsv1alpha1.PodContainerProbe{Name: name, ContainerName: container, PodConditionType: condition,
		MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"a": "b"}}}}
	if exec {
		p.Probe.Exec = &corev1.ExecAction{Command: []string{"true"}}
	} else {
		p.Probe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}
	}
	return p
}

func gamePod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "game-0", Namespace: ns, Labels: map[string]string{"app": "game"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main"}},
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
				{Name: "init"}},
		}}
}

func TestMatched(t *testing.T) {
	allow := func(*appsv1alpha1.PodProbeMarker) bool { return true }
	markers := []appsv1alpha1.PodProbeMarker{
		*marker("b", "alice", nil, probe("idle", "main", "game.io/idle", false), probe("nocond", "main", "", false),
			probe("side", "sidecar", "game.io/side", false), probe("init", "init", "game.io/init", false),
			probe("gone", "other", "game.io/gone", false)),
		*marker("a", "alice", nil, probe("dup", "main", "game.io/idle", false), probe("idle", "main", "game.io/idle2", false),
			probe("busy", "main", "game.io/busy", true)),
	}
	probes, names := Matched(gamePod(), markers, allow)
	var got []string
	for _, p := range probes {
		got = append(got, p.Name+"@"+p.ContainerName)
		assert.Nil(t, p.MarkerPolicy, "markerPolicy left out")
	}
	assert.Equal(t, []string{"idle@main", "side@sidecar", "busy@main"}, got,
		"no condition, a plain init container, a missing container, a repeated condition or container/name: skipped")
	assert.Equal(t, []string{"a", "b"}, names)

	asked := 0
	probes, names = Matched(gamePod(), markers[1:], func(*appsv1alpha1.PodProbeMarker) bool { asked++; return false })
	got = nil
	for _, p := range probes {
		got = append(got, p.Name)
	}
	assert.Equal(t, []string{"dup", "idle"}, got, "an exec probe whose requester may not exec is left out")
	assert.Equal(t, []string{"a"}, names)
	assert.Equal(t, 1, asked)
}

func admit(t *testing.T, w *webhook, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	res := w.admit(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: pod.Namespace,
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}})
	require.NoError(t, res.Err)
	require.True(t, res.Allowed)
	if len(res.Patch) == 0 {
		return pod
	}
	p, err := jsonpatch.DecodePatch(res.Patch)
	require.NoError(t, err)
	out, err := p.Apply(raw)
	require.NoError(t, err)
	got := &corev1.Pod{}
	require.NoError(t, json.Unmarshal(out, got))
	return got
}

func TestWebhook(t *testing.T) {
	kruise := kruisefake.NewSimpleClientset(
		marker("game", "alice", map[string]string{"app": "game"}, probe("idle", "main", "game.io/idle", true)),
		marker("web", "alice", map[string]string{"app": "web"}, probe("up", "main", "web.io/up", false)),
		marker("noreq", "", map[string]string{"app": "game"}, probe("x", "main", "game.io/x", true)),
		marker("tcp", "bob", map[string]string{"app": "game"}, probe("port", "main", "game.io/port", false)))
	kube := kubefake.NewClientset()
	var asked []authorizationv1.ResourceAttributes
	kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		asked = append(asked, *sar.Spec.ResourceAttributes)
		sar.Status.Allowed = sar.Spec.User == "alice" && sar.Spec.ResourceAttributes.Name == "game-0"
		return true, sar, nil
	})
	w := &webhook{markers: kruise.AppsV1alpha1(), sars: kube.AuthorizationV1(), kruiseNamespace: "kruise-system"}

	got := admit(t, w, gamePod())
	assert.Equal(t, "game,tcp", got.Annotations[appsv1alpha1.PodProbeMarkerListAnnotationKey])
	var probes []appsv1alpha1.PodContainerProbe
	require.NoError(t, json.Unmarshal([]byte(got.Annotations[appsv1alpha1.PodProbeMarkerAnnotationKey]), &probes))
	require.Len(t, probes, 2)
	assert.Equal(t, "idle", probes[0].Name, "alice may exec into game-0 by name")
	assert.Equal(t, "port", probes[1].Name)
	assert.Equal(t, []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"},
		{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec", Name: "game-0"},
	}, asked, "noreq has no requester: not asked, left out")

	// A pod with annotations already keeps them; the list it names is read, selectors still apply.
	pod := gamePod()
	pod.Annotations = map[string]string{"keep": "1", appsv1alpha1.PodProbeMarkerListAnnotationKey: "tcp,web,missing"}
	got = admit(t, w, pod)
	assert.Equal(t, "1", got.Annotations["keep"])
	assert.Equal(t, "tcp", got.Annotations[appsv1alpha1.PodProbeMarkerListAnnotationKey])

	other := gamePod()
	other.Labels = map[string]string{"app": "none"}
	assert.Nil(t, admit(t, w, other).Annotations, "selected by nothing: untouched")
	excluded := gamePod()
	excluded.Namespace = "kube-system"
	assert.Nil(t, admit(t, w, excluded).Annotations, "kube-system is never touched")
}
