package podprobemarker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func markersOf(t *testing.T, webhooksOff bool, ppms ...*appsv1alpha1.PodProbeMarker) map[string][]*marker {
	t.Helper()
	out := map[string][]*marker{}
	for _, p := range ppms {
		m, err := markerOf(p, webhooksOff)
		require.NoError(t, err)
		out[p.Namespace] = append(out[p.Namespace], m)
	}
	return out
}

// allowAll answers every question of in as allowed.
func allowAll(in nodeInput) map[execKey]verdict {
	out := map[execKey]verdict{}
	for _, q := range questions(in) {
		out[q.key] = verdict{allowed: true}
	}
	return out
}

// Only the active, scheduled, initialized pods with an IP that the selector matches are listed.
func TestDesiredListsMatchingProbedPods(t *testing.T) {
	tcp := tcpProbe("tcp", intstr.FromInt32(80))
	now := time.Now()
	pods := []*corev1.Pod{
		probedPod("web-1", "u1", "10.0.0.1"),
		probedPod("other", "u2", "10.0.0.2", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
		probedPod("done", "u3", "10.0.0.3", gen.SetPodPhase(corev1.PodSucceeded)),
		probedPod("failed", "u4", "10.0.0.4", gen.SetPodPhase(corev1.PodFailed)),
		probedPod("deleting", "u5", "10.0.0.5", gen.SetPodDeletionTimestamp(now)),
		probedPod("init", "u6", "10.0.0.6", notInitialized),
		probedPod("no-ip", "u7", ""),
		probedPod("no-condition", "u8", "10.0.0.8", func(p *corev1.Pod) { p.Status.Conditions = nil }),
	}
	in := nodeInput{pods: pods, markers: markersOf(t, false, webMarker("m", tcp))}
	out := desired(in)
	assert.Equal(t, appsv1alpha1.NodePodProbeSpec{PodProbes: []appsv1alpha1.PodProbe{
		{Name: "web-1", Namespace: ns, UID: "u1", IP: "10.0.0.1", Probes: []appsv1alpha1.ContainerProbe{listed("m", tcp)}},
	}}, out.spec)
	assert.Empty(t, out.problems)

	// A pod of another namespace is not selected by ns's markers.
	elsewhere := probedPod("web-1", "u9", "10.0.0.9", gen.SetPodNamespace("other"))
	out = desired(nodeInput{pods: []*corev1.Pod{elsewhere}, markers: in.markers})
	assert.Empty(t, out.spec.PodProbes)
}

// A pod recreated under the same name is another entry: its new uid and IP.
func TestDesiredFollowsTheUID(t *testing.T) {
	tcp := tcpProbe("tcp", intstr.FromInt32(80))
	markers := markersOf(t, false, webMarker("m", tcp))
	before := desired(nodeInput{pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")}, markers: markers})
	after := desired(nodeInput{pods: []*corev1.Pod{probedPod("web-1", "u2", "10.0.0.7")}, markers: markers})
	require.Len(t, after.spec.PodProbes, 1)
	assert.Equal(t, "u2", after.spec.PodProbes[0].UID)
	assert.Equal(t, "10.0.0.7", after.spec.PodProbes[0].IP)
	assert.NotEqual(t, before.spec, after.spec)
}

// Named ports are resolved to the numbers the container declares; a name it does not declare
// leaves the probe out and says so for the marker.
func TestDesiredResolvesNamedPorts(t *testing.T) {
	named := tcpProbe("named", intstr.FromString("http"))
	spelled := httpProbe("spelled", intstr.FromString("9090"))
	unknown := httpProbe("unknown", intstr.FromString("admin"))
	wrongContainer := tcpProbe("sidecar", intstr.FromString("http"))
	wrongContainer.ContainerName = "sidecar"
	ppm := webMarker("m", named, spelled, unknown, wrongContainer)
	out := desired(nodeInput{pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")}, markers: markersOf(t, false, ppm)})

	require.Len(t, out.spec.PodProbes, 1)
	got := out.spec.PodProbes[0].Probes
	require.Len(t, got, 2)
	assert.Equal(t, "m#named", got[0].Name)
	assert.Equal(t, intstr.FromInt32(8080), got[0].Probe.TCPSocket.Port)
	assert.Equal(t, "m#spelled", got[1].Name)
	assert.Equal(t, intstr.FromInt32(9090), got[1].Probe.HTTPGet.Port)
	assert.Equal(t, intstr.FromString("http"), ppm.Spec.Probes[0].Probe.TCPSocket.Port, "the marker's probe is not modified")
	assert.Equal(t, map[string]map[string][]string{"ns/m": {ReasonPortUnresolved: {
		`pod web-1: probe sidecar: port "http" is not a port of container sidecar`,
		`pod web-1: probe unknown: port "admin" is not a port of container main`,
	}}}, out.problems)
}

func livenessContext(t *testing.T, probes ...nodeprobe.ContainerLiveness) gen.PodModifier {
	t.Helper()
	raw, err := nodeprobe.EncodeProbeContext(probes)
	require.NoError(t, err)
	return gen.AddPodAnnotations(map[string]string{appsv1alpha1.ContainerProbeContextAnnotation: raw})
}

// With EnhancedLivenessProbe the pod's own liveness probes are listed, named after their
// container, ports resolved; without it they are not.
func TestDesiredListsEnhancedLiveness(t *testing.T) {
	liveness := &corev1.Probe{PeriodSeconds: 10, FailureThreshold: 3,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}}
	pod := probedPod("web-1", "u1", "10.0.0.1", livenessContext(t,
		nodeprobe.ContainerLiveness{Name: "main", LivenessProbe: liveness},
		nodeprobe.ContainerLiveness{Name: "no-probe"},
		nodeprobe.ContainerLiveness{Name: "bad", LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("nope")}}}}))
	tcp := tcpProbe("tcp", intstr.FromInt32(80))

	out := desired(nodeInput{pods: []*corev1.Pod{pod}, markers: markersOf(t, false, webMarker("m", tcp)), liveness: true})
	want := liveness.DeepCopy()
	want.HTTPGet.Port = intstr.FromInt32(8080)
	require.Len(t, out.spec.PodProbes, 1)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{
		{Name: "EnhancedLiveness#main", ContainerName: "main", Probe: appsv1alpha1.ContainerProbeSpec{Probe: *want}},
		listed("m", tcp),
	}, out.spec.PodProbes[0].Probes, "sorted by name")
	assert.Equal(t, []string{`ns/web-1: container bad: port "nope" is not a port of container bad`}, out.livenessProblems)

	// Liveness alone, no marker: the pod is listed.
	out = desired(nodeInput{pods: []*corev1.Pod{pod}, liveness: true})
	require.Len(t, out.spec.PodProbes, 1)
	assert.Len(t, out.spec.PodProbes[0].Probes, 1)

	// Gate off: not listed.
	out = desired(nodeInput{pods: []*corev1.Pod{pod}})
	assert.Empty(t, out.spec.PodProbes)

	// An unreadable annotation lists nothing and says why.
	bad := gen.PodFrom(pod, gen.AddPodAnnotations(map[string]string{appsv1alpha1.ContainerProbeContextAnnotation: "{"}))
	out = desired(nodeInput{pods: []*corev1.Pod{bad}, liveness: true})
	assert.Empty(t, out.spec.PodProbes)
	assert.Len(t, out.livenessProblems, 1)
}

// The spec does not depend on the order of the pods or the markers: entries by namespace, name
// and uid, probes by name.
func TestDesiredIsSorted(t *testing.T) {
	a := webMarker("a", tcpProbe("z", intstr.FromInt32(1)), tcpProbe("b", intstr.FromInt32(2)))
	b := webMarker("b", tcpProbe("a", intstr.FromInt32(3)))
	other := gen.PodProbeMarkerFrom(a, gen.SetPodProbeMarkerNamespace("aaa"))
	p1 := probedPod("web-2", "u2", "10.0.0.2")
	p2 := probedPod("web-1", "u1", "10.0.0.1")
	p3 := probedPod("web-9", "u3", "10.0.0.3", gen.SetPodNamespace("aaa"))

	one := desired(nodeInput{pods: []*corev1.Pod{p1, p2, p3}, markers: markersOf(t, false, a, b, other)})
	two := desired(nodeInput{pods: []*corev1.Pod{p3, p2, p1}, markers: markersOf(t, false, b, other, a)})
	assert.Equal(t, one.spec, two.spec)
	var order []string
	for _, pp := range one.spec.PodProbes {
		order = append(order, pp.Namespace+"/"+pp.Name)
	}
	assert.Equal(t, []string{"aaa/web-9", "ns/web-1", "ns/web-2"}, order)
	var names []string
	for _, p := range one.spec.PodProbes[1].Probes {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"a#b", "a#z", "b#a"}, names)
}

// A marker's probe named twice (admitted without the webhook's checks) is listed once.
func TestDesiredListsANameOnce(t *testing.T) {
	ppm := webMarker("m", tcpProbe("x", intstr.FromInt32(1)), tcpProbe("x", intstr.FromInt32(2)))
	out := desired(nodeInput{pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")}, markers: markersOf(t, false, ppm)})
	require.Len(t, out.spec.PodProbes, 1)
	assert.Len(t, out.spec.PodProbes[0].Probes, 1)
}

// Exec probes are listed only for the pods the requester may exec into; TCP and HTTP probes
// need no question.
func TestDesiredExecNeedsTheRequestersRight(t *testing.T) {
	exec, tcp := execProbe("exec"), tcpProbe("tcp", intstr.FromInt32(80))
	pods := []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1"), probedPod("web-2", "u2", "10.0.0.2")}
	in := nodeInput{pods: pods, markers: markersOf(t, false, webMarker("m", exec, tcp), webMarker("tcponly", tcp))}

	qs := questions(in)
	require.Len(t, qs, 2, "one per pod the marker with exec probes selects")
	assert.Equal(t, question{key: execKey{"ns/m", "u1"}, requester: alice, namespace: ns, pod: "web-1"}, qs[0])

	in.exec = map[execKey]verdict{{"ns/m", "u1"}: {allowed: true}, {"ns/m", "u2"}: {denied: "create pods/exec (no RBAC rule)"}}
	out := desired(in)
	require.Len(t, out.spec.PodProbes, 2)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", exec), listed("m", tcp), listed("tcponly", tcp)}, out.spec.PodProbes[0].Probes)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", tcp), listed("tcponly", tcp)}, out.spec.PodProbes[1].Probes,
		"refused: the exec probe is left out, TCP still runs")
	assert.Equal(t, map[string]map[string][]string{"ns/m": {ReasonExecRefused: {
		"pod web-2: alice may not create pods/exec (create pods/exec (no RBAC rule))"}}}, out.problems)

	// An unanswered question counts as refused.
	in.exec = nil
	out = desired(in)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", tcp), listed("tcponly", tcp)}, out.spec.PodProbes[0].Probes)
}

// A marker without a requester, or any marker with the webhooks off, gets no exec probe and no
// question is asked; its other probes run. One problem per marker, not per pod.
func TestDesiredNoRequesterNoExec(t *testing.T) {
	exec, tcp := execProbe("exec"), tcpProbe("tcp", intstr.FromInt32(80))
	pods := []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1"), probedPod("web-2", "u2", "10.0.0.2")}
	anonymous := gen.PodProbeMarkerFrom(webMarker("m", exec, tcp), func(m *appsv1alpha1.PodProbeMarker) { m.Annotations = nil })
	for name, in := range map[string]nodeInput{
		"no requester": {pods: pods, markers: markersOf(t, false, anonymous)},
		"webhooks off": {pods: pods, markers: markersOf(t, true, webMarker("m", exec, tcp))},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, questions(in))
			in.exec = allowAll(in)
			out := desired(in)
			require.Len(t, out.spec.PodProbes, 2)
			for _, pp := range out.spec.PodProbes {
				assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", tcp)}, pp.Probes)
			}
			require.Len(t, out.problems["ns/m"][ReasonNoRequester], 1)
		})
	}
}

// An invalid selector selects nothing.
func TestMarkerOfInvalidSelector(t *testing.T) {
	_, err := markerOf(gen.PodProbeMarker("m"), false)
	assert.Error(t, err)
	bad := gen.PodProbeMarker("m", func(m *appsv1alpha1.PodProbeMarker) {
		m.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	})
	_, err = markerOf(bad, false)
	assert.Error(t, err)
}
