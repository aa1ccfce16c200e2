package podprobemarker

import (
	"context"
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

var nodeRef = metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}

// ---- node lifecycle ----

// A node gets its NodePodProbe, owned by it, with its pods' probes; a sync that finds nothing
// changed writes nothing.
func TestNodeGetsItsNodePodProbe(t *testing.T) {
	tcp := tcpProbe("tcp", intstr.FromInt32(80))
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")},
		markers: []*appsv1alpha1.PodProbeMarker{webMarker("m", tcp)}})
	assert.Zero(t, f.sync(t, nodeName), "no exec answer to renew")
	assert.Equal(t, []string{"create nodepodprobes node-a"}, f.writes())
	npp := f.npp(t)
	require.NotNil(t, npp)
	assert.Equal(t, []metav1.OwnerReference{nodeRef}, npp.OwnerReferences)
	assert.Equal(t, []appsv1alpha1.PodProbe{{Name: "web-1", Namespace: ns, UID: "u1", IP: "10.0.0.1",
		Probes: []appsv1alpha1.ContainerProbe{listed("m", tcp)}}}, npp.Spec.PodProbes)

	f.cacheNPP(t)
	f.kruise.ClearActions()
	f.sync(t, nodeName)
	assert.Empty(t, f.writes(), "steady state: no write")

	// The pod goes: the entry goes.
	require.NoError(t, f.podIdx.Delete(probedPod("web-1", "u1", "10.0.0.1")))
	f.sync(t, nodeName)
	assert.Equal(t, []string{"update nodepodprobes node-a"}, f.writes())
	assert.Empty(t, f.npp(t).Spec.PodProbes)
}

// A node without probed pods still gets an empty NodePodProbe (the daemon watches it).
func TestNodeWithoutPodsGetsAnEmptyOne(t *testing.T) {
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}})
	f.sync(t, nodeName)
	require.NotNil(t, f.npp(t))
	assert.Empty(t, f.npp(t).Spec.PodProbes)
}

// A virtual-kubelet node has none (its pods are served from their own conditions): one it has
// is deleted.
func TestVirtualNodeHasNone(t *testing.T) {
	virtual := gen.AddNodeLabel(appsv1alpha1.VirtualKubeletLabel, appsv1alpha1.VirtualKubeletValue)
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode(virtual)}, pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")},
		markers: []*appsv1alpha1.PodProbeMarker{webMarker("m", tcpProbe("tcp", intstr.FromInt32(80)))}})
	f.sync(t, nodeName)
	assert.Empty(t, f.writes())

	f = newFixture(t, objects{nodes: []*corev1.Node{realNode(virtual)}, npps: []*appsv1alpha1.NodePodProbe{gen.NodePodProbe(nodeName, gen.SetNodePodProbeUID("npp-uid"))}})
	f.sync(t, nodeName)
	assert.Equal(t, []string{"delete nodepodprobes node-a"}, f.writes())
	assert.Nil(t, f.npp(t))
}

// A deleted node's NodePodProbe is deleted, once the API server confirms the node is gone.
func TestNodeGoneDeletesIt(t *testing.T) {
	npp := gen.NodePodProbe(nodeName, gen.SetNodePodProbeUID("npp-uid"), gen.SetNodePodProbeOwnerReferences(nodeRef))
	f := newFixture(t, objects{npps: []*appsv1alpha1.NodePodProbe{npp}})
	f.sync(t, nodeName)
	assert.Equal(t, []string{"delete nodepodprobes node-a"}, f.writes())

	// Not cached yet, but there: kept.
	f = newFixture(t, objects{npps: []*appsv1alpha1.NodePodProbe{npp}})
	_, err := f.kube.CoreV1().Nodes().Create(context.Background(), realNode(), metav1.CreateOptions{})
	require.NoError(t, err)
	f.sync(t, nodeName)
	assert.Empty(t, f.writes())
}

// Someone else's edit of the spec is undone.
func TestForeignSpecEditIsUndone(t *testing.T) {
	npp := gen.NodePodProbe(nodeName, gen.SetNodePodProbeUID("npp-uid"), gen.SetNodePodProbeOwnerReferences(nodeRef),
		gen.AddNodePodProbePod(appsv1alpha1.PodProbe{Name: "intruder", Namespace: ns, UID: "x", IP: "169.254.169.254",
			Probes: []appsv1alpha1.ContainerProbe{{Name: "evil#x", ContainerName: "main"}}}))
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, npps: []*appsv1alpha1.NodePodProbe{npp}})
	f.sync(t, nodeName)
	assert.Equal(t, []string{"update nodepodprobes node-a"}, f.writes())
	assert.Empty(t, f.npp(t).Spec.PodProbes)
}

// A marker being deleted is off the specs at once.
func TestDeletedMarkerLeavesTheSpec(t *testing.T) {
	tcp := tcpProbe("tcp", intstr.FromInt32(80))
	going := gen.PodProbeMarkerFrom(webMarker("m", tcp), gen.SetPodProbeMarkerDeletionTimestamp(t0),
		gen.SetPodProbeMarkerFinalizers(appsv1alpha1.PodProbeMarkerFinalizer))
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")},
		markers: []*appsv1alpha1.PodProbeMarker{going, webMarker("kept", tcp)}})
	f.sync(t, nodeName)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("kept", tcp)}, f.npp(t).Spec.PodProbes[0].Probes)
}

// With gate PodProbeMarkerGate off, only the enhanced liveness probes are listed.
func TestLivenessOnly(t *testing.T) {
	liveness := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/alive"}}}}
	pod := probedPod("web-1", "u1", "10.0.0.1", livenessContext(t, nodeprobe.ContainerLiveness{Name: "main", LivenessProbe: liveness}))
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, pods: []*corev1.Pod{pod},
		markers: []*appsv1alpha1.PodProbeMarker{webMarker("m", tcpProbe("tcp", intstr.FromInt32(80)))}}, noMarkers, withLiveness)
	f.sync(t, nodeName)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{{Name: "EnhancedLiveness#main", ContainerName: "main",
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: *liveness}}}, f.npp(t).Spec.PodProbes[0].Probes)
	assert.Empty(t, f.sars, "the pod's own exec liveness probe needs no question")
	f.sync(t, "ns/m")
	assert.Empty(t, f.writes()[1:], "markers are not looked at")
}

// ---- the exec gate ----

// Exec probes are asked about per pod, the answers cached and asked again when they expire;
// a refusal leaves the pod's exec probes out and is reported once per change on the marker.
func TestExecGate(t *testing.T) {
	exec, tcp := execProbe("exec"), tcpProbe("tcp", intstr.FromInt32(80))
	ppm := webMarker("m", exec, tcp)
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()},
		pods:    []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1"), probedPod("web-2", "u2", "10.0.0.2")},
		markers: []*appsv1alpha1.PodProbeMarker{ppm}})
	f.mayExec = map[string]bool{"web-1": true}

	after := f.sync(t, nodeName)
	assert.Equal(t, []string{"alice create pods/exec ns/web-1", "alice create pods/exec ns/web-2"}, f.sars)
	assert.Equal(t, refusedFor-refreshAhead, after, "back when the earliest answer (the refusal) is due")
	probes := f.npp(t).Spec.PodProbes
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", exec), listed("m", tcp)}, probes[0].Probes)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", tcp)}, probes[1].Probes)
	assert.Equal(t, []string{"ns/m"}, f.queued(), "the marker is queued to report the refusal")

	f.sync(t, "ns/m")
	assert.Equal(t, []string{"Warning ExecProbesRefused Probes left out of the NodePodProbes: " +
		"pod web-2: alice may not create pods/exec (create pods/exec (no RBAC rule))"}, f.events())

	// Cached: a sync asks nothing and reports nothing again.
	f.cacheNPP(t)
	f.sars = nil
	f.sync(t, nodeName)
	f.sync(t, "ns/m")
	assert.Empty(t, f.sars)
	assert.Empty(t, f.queued())
	assert.Empty(t, f.events())

	// A new pod is asked about.
	require.NoError(t, f.podIdx.Add(probedPod("web-3", "u3", "10.0.0.3")))
	f.sync(t, nodeName)
	assert.Equal(t, []string{"alice create pods/exec ns/web-3"}, f.sars)
	f.cacheNPP(t)

	// The right is granted: noticed once the refusal expires (refreshed with the answers
	// expiring within refreshAhead of it).
	f.mayExec = map[string]bool{"*": true}
	f.sars = nil
	f.clock.Step(after)
	f.sync(t, nodeName)
	assert.Equal(t, []string{"alice create pods/exec ns/web-2", "alice create pods/exec ns/web-3"}, f.sars)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", exec), listed("m", tcp)}, f.npp(t).Spec.PodProbes[1].Probes)
	assert.Equal(t, []string{"ns/m"}, f.queued(), "the refusal is gone")
	f.sync(t, "ns/m")
	assert.Empty(t, f.events(), "nothing left to report")
	f.cacheNPP(t)

	// The right is revoked: noticed when the allowed answers expire.
	f.mayExec = map[string]bool{}
	f.sars = nil
	f.clock.Step(allowedFor)
	f.sync(t, nodeName)
	assert.Len(t, f.sars, 3)
	for _, pp := range f.npp(t).Spec.PodProbes {
		assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", tcp)}, pp.Probes)
	}
	f.sync(t, "ns/m")
	assert.Equal(t, []string{"Warning ExecProbesRefused Probes left out of the NodePodProbes: " +
		"pod web-1: alice may not create pods/exec (create pods/exec (no RBAC rule)); " +
		"pod web-2: alice may not create pods/exec (create pods/exec (no RBAC rule)); " +
		"pod web-3: alice may not create pods/exec (create pods/exec (no RBAC rule))"}, f.events(), "one Event sums up the pods")
}

// Answers of pods gone are forgotten.
func TestGateSweeps(t *testing.T) {
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")},
		markers: []*appsv1alpha1.PodProbeMarker{webMarker("m", execProbe("exec"))}})
	f.sync(t, nodeName)
	assert.Equal(t, 1, f.ctrl.gate.size())
	require.NoError(t, f.podIdx.Delete(probedPod("web-1", "u1", "10.0.0.1")))
	require.NoError(t, f.podIdx.Add(probedPod("web-2", "u2", "10.0.0.2")))
	f.clock.Step(allowedFor + time.Second)
	f.sync(t, nodeName)
	assert.Equal(t, 1, f.ctrl.gate.size(), "web-1's answer expired and was swept")
}

// With the webhooks off, nothing vouches for the requester: no exec probe, no question, one
// Event.
func TestWebhooksOffNoExec(t *testing.T) {
	exec, tcp := execProbe("exec"), tcpProbe("tcp", intstr.FromInt32(80))
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")},
		markers: []*appsv1alpha1.PodProbeMarker{webMarker("m", exec, tcp)}}, webhooksOff)
	f.sync(t, nodeName)
	assert.Empty(t, f.sars)
	assert.Equal(t, []appsv1alpha1.ContainerProbe{listed("m", tcp)}, f.npp(t).Spec.PodProbes[0].Probes)
	f.sync(t, "ns/m")
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning NoRequester")
	assert.Contains(t, events[0], "webhooks are off")
}

// A named port no container declares: the probe is left out and the marker gets an Event.
func TestUnresolvedPortEvent(t *testing.T) {
	f := newFixture(t, objects{nodes: []*corev1.Node{realNode()}, pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1")},
		markers: []*appsv1alpha1.PodProbeMarker{webMarker("m", tcpProbe("tcp", intstr.FromString("grpc")))}})
	f.sync(t, nodeName)
	assert.Empty(t, f.npp(t).Spec.PodProbes)
	f.sync(t, "ns/m")
	assert.Equal(t, []string{`Warning PortUnresolved Probes left out of the NodePodProbes: pod web-1: probe tcp: port "grpc" is not a port of container main`}, f.events())
}

// ---- finalizer and status ----

// Every marker gets the finalizer; its status counts the pods it matches (active, scheduled,
// initialized: with or without an IP) and is written only when it changes.
func TestMarkerFinalizerAndStatus(t *testing.T) {
	ppm := gen.PodProbeMarkerFrom(webMarker("m", tcpProbe("tcp", intstr.FromInt32(80))), gen.SetPodProbeMarkerGeneration(3))
	f := newFixture(t, objects{markers: []*appsv1alpha1.PodProbeMarker{ppm}, pods: []*corev1.Pod{
		probedPod("web-1", "u1", "10.0.0.1"), probedPod("web-2", "u2", ""), probedPod("init", "u3", "", notInitialized),
		probedPod("done", "u4", "10.0.0.4", gen.SetPodPhase(corev1.PodSucceeded)),
		probedPod("db", "u5", "10.0.0.5", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
	}})
	f.sync(t, "ns/m")
	assert.Equal(t, []string{"update podprobemarkers m", "update podprobemarkers/status m"}, f.writes())
	got := f.marker(t, "m")
	assert.Equal(t, []string{appsv1alpha1.PodProbeMarkerFinalizer}, got.Finalizers)
	assert.Equal(t, appsv1alpha1.PodProbeMarkerStatus{ObservedGeneration: 3, MatchedPods: 2}, got.Status)

	require.NoError(t, f.ppmIdx.Update(got))
	f.kruise.ClearActions()
	f.sync(t, "ns/m")
	assert.Empty(t, f.writes(), "nothing changed: no write")
}

// A marker being deleted keeps its finalizer while a NodePodProbe lists a probe of it or an
// active pod of its namespace records marks of it; names are parsed, not matched as substrings,
// and other namespaces do not count (OpenKruise #2367).
func TestFinalizerWaitsForCleanup(t *testing.T) {
	going := gen.PodProbeMarkerFrom(webMarker("a", tcpProbe("tcp", intstr.FromInt32(80))), gen.SetPodProbeMarkerDeletionTimestamp(t0),
		gen.SetPodProbeMarkerFinalizers("other.io/keep", appsv1alpha1.PodProbeMarkerFinalizer))
	entry := func(namespace, probe string) appsv1alpha1.PodProbe {
		return appsv1alpha1.PodProbe{Name: "p", Namespace: namespace, UID: "u", IP: "10.0.0.9",
			Probes: []appsv1alpha1.ContainerProbe{{Name: probe, ContainerName: "main"}}}
	}
	marks := func(probe string) gen.PodModifier {
		return gen.AddPodAnnotations(map[string]string{nodeprobe.MarksAnnotation: nodeprobe.EncodeMarks(map[string]nodeprobe.Marks{probe: {Condition: "x"}})})
	}
	unrelated := gen.NodePodProbe(nodeName, gen.AddNodePodProbePod(entry(ns, "ba#tcp")), gen.AddNodePodProbePod(entry("other", "a#tcp")),
		gen.AddNodePodProbePod(entry(ns, "EnhancedLiveness#a")))
	for name, tc := range map[string]struct {
		npp  *appsv1alpha1.NodePodProbe
		pods []*corev1.Pod
		wait bool
	}{
		"clean": {npp: unrelated, pods: []*corev1.Pod{
			probedPod("other-marker", "u1", "10.0.0.1", marks("ba#tcp")),
			probedPod("elsewhere", "u2", "10.0.0.2", gen.SetPodNamespace("other"), marks("a#tcp")),
			probedPod("finished", "u3", "10.0.0.3", gen.SetPodPhase(corev1.PodSucceeded), marks("a#tcp")),
		}},
		"listed":  {npp: gen.NodePodProbeFrom(unrelated, gen.AddNodePodProbePod(entry(ns, "a#tcp"))), wait: true},
		"marking": {npp: unrelated, pods: []*corev1.Pod{probedPod("marked", "u1", "10.0.0.1", marks("a#tcp"))}, wait: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, objects{markers: []*appsv1alpha1.PodProbeMarker{going}, npps: []*appsv1alpha1.NodePodProbe{tc.npp}, pods: tc.pods})
			after := f.sync(t, "ns/a")
			if tc.wait {
				assert.Equal(t, waitForCleanup, after)
				assert.Empty(t, f.writes())
				return
			}
			assert.Zero(t, after)
			assert.Equal(t, []string{"update podprobemarkers a"}, f.writes())
			assert.Equal(t, []string{"other.io/keep"}, f.marker(t, "a").Finalizers, "only ours is removed")
		})
	}
}
