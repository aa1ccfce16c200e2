package podprobemarker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// Which pod changes queue which keys: the pod's node for what its spec reads, the markers that
// select it for their status, nothing for the kubelet's other status writes.
func TestPodEventsQueue(t *testing.T) {
	pod := probedPod("web-1", "u1", "10.0.0.1")
	f := newFixture(t, objects{markers: []*appsv1alpha1.PodProbeMarker{webMarker("m"),
		gen.PodProbeMarkerFrom(webMarker("db"), gen.SetPodProbeMarkerSelector(map[string]string{"app": "db"}))}})

	f.ctrl.podChanged(nil, pod)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "add")
	f.ctrl.podChanged(pod, nil)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "delete")
	f.ctrl.podChanged(cache.DeletedFinalStateUnknown{Key: "ns/web-1", Obj: pod}, nil)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "tombstone")
	f.ctrl.podChanged(nil, gen.PodFrom(pod, gen.SetPodNodeName("")))
	assert.Equal(t, []string{"ns/m"}, f.queued(), "an unscheduled pod has no node")

	noise := gen.PodFrom(pod, gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "main", Ready: true}),
		gen.SetPodResourceVersion("9"), gen.AddPodAnnotations(map[string]string{"other.io/x": "y"}))
	f.ctrl.podChanged(pod, noise)
	assert.Empty(t, f.queued(), "the kubelet's container statuses and other annotations are not read")

	for name, tc := range map[string]struct {
		mod  gen.PodModifier
		want []string
	}{
		"ip":              {gen.SetPodIP("10.0.0.2"), []string{nodeName}},
		"phase":           {gen.SetPodPhase(corev1.PodSucceeded), []string{nodeName, "ns/m"}},
		"initialized":     {notInitialized, []string{nodeName, "ns/m"}},
		"deleting":        {gen.SetPodDeletionTimestamp(t0), []string{nodeName, "ns/m"}},
		"probe context":   {gen.AddPodAnnotations(map[string]string{appsv1alpha1.ContainerProbeContextAnnotation: "[]"}), []string{nodeName}},
		"labels: old+new": {func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }, []string{nodeName, "ns/db", "ns/m"}},
		"uid":             {gen.SetPodUID("u2"), []string{nodeName}},
	} {
		t.Run(name, func(t *testing.T) {
			f.ctrl.podChanged(pod, gen.PodFrom(pod, tc.mod))
			assert.Equal(t, tc.want, f.queued())
		})
	}

	// Bound to a node: the node, and the marker (the pod now counts).
	f.ctrl.podChanged(gen.PodFrom(pod, gen.SetPodNodeName("")), pod)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued())
}

// Marks taken off a pod (or the pod gone with marks) queue the markers they were of: one being
// deleted may be freed.
func TestMarksGoneQueueTheMarker(t *testing.T) {
	marked := probedPod("web-1", "u1", "10.0.0.1", gen.AddPodAnnotations(map[string]string{nodeprobe.MarksAnnotation: nodeprobe.EncodeMarks(
		map[string]nodeprobe.Marks{"gone#x": {Condition: "c"}, "kept#y": {Labels: []string{"l"}}, "EnhancedLiveness#main": {}})}))
	unmarked := gen.PodFrom(marked, gen.AddPodAnnotations(map[string]string{nodeprobe.MarksAnnotation: nodeprobe.EncodeMarks(
		map[string]nodeprobe.Marks{"kept#y": {Labels: []string{"l"}}})}))
	f := newFixture(t, objects{})
	f.ctrl.podChanged(marked, unmarked)
	assert.Equal(t, []string{nodeName, "ns/gone"}, f.queued())
	f.ctrl.podChanged(marked, nil)
	assert.Equal(t, []string{nodeName, "ns/gone", "ns/kept"}, f.queued())
}

// A marker change queues the marker and the nodes of the pods its old and new selectors match;
// its status (our write) queues nothing.
func TestMarkerEventsQueue(t *testing.T) {
	onB := probedPod("db-1", "u2", "10.0.0.2", gen.SetPodNodeName("node-b"), func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} })
	f := newFixture(t, objects{pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1"), onB,
		probedPod("unbound", "u3", "", gen.SetPodNodeName(""))}})
	m := webMarker("m", tcpProbe("tcp", intstr.FromInt32(80)))

	f.ctrl.markerChanged(nil, m)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "add")
	f.ctrl.markerChanged(m, nil)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "delete")

	f.ctrl.markerChanged(m, gen.PodProbeMarkerFrom(m, gen.SetPodProbeMarkerStatus(appsv1alpha1.PodProbeMarkerStatus{MatchedPods: 1})))
	assert.Empty(t, f.queued(), "status only")

	f.ctrl.markerChanged(m, gen.PodProbeMarkerFrom(m, gen.SetPodProbeMarkerSelector(map[string]string{"app": "db"})))
	assert.Equal(t, []string{nodeName, "node-b", "ns/m"}, f.queued(), "old and new selector")
	f.ctrl.markerChanged(m, gen.PodProbeMarkerFrom(m, requestedBy(alice), gen.AddPodProbeMarkerAnnotations(map[string]string{nodeprobe.RequesterAnnotation: `{"username":"bob"}`})))
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "requester")
	f.ctrl.markerChanged(m, gen.PodProbeMarkerFrom(m, gen.SetPodProbeMarkerDeletionTimestamp(t0)))
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued(), "deletion")
	f.ctrl.markerChanged(m, gen.PodProbeMarkerFrom(m, gen.SetPodProbeMarkerFinalizers(appsv1alpha1.PodProbeMarkerFinalizer)))
	assert.Equal(t, []string{"ns/m"}, f.queued(), "finalizer: the marker only")
}

// Node events: added and deleted nodes, and the virtual-kubelet label; heartbeats cost nothing.
func TestNodeEventsQueue(t *testing.T) {
	f := newFixture(t, objects{})
	n := realNode()
	f.ctrl.enqueueNode(n)
	assert.Equal(t, []string{nodeName}, f.queued())
	f.ctrl.enqueueNode(cache.DeletedFinalStateUnknown{Key: nodeName, Obj: n})
	assert.Equal(t, []string{nodeName}, f.queued())
	f.ctrl.nodeUpdated(n, gen.NodeFrom(n, gen.SetNodeResourceVersion("7"), gen.SetNodeCondition(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse})))
	assert.Empty(t, f.queued())
	f.ctrl.nodeUpdated(n, gen.NodeFrom(n, gen.AddNodeLabel(appsv1alpha1.VirtualKubeletLabel, appsv1alpha1.VirtualKubeletValue)))
	assert.Equal(t, []string{nodeName}, f.queued())
}

// NodePodProbe events: added, deleted or spec changed queue the node; status (the daemon's)
// nothing; probes of a marker leaving queue the marker.
func TestNodePodProbeEventsQueue(t *testing.T) {
	f := newFixture(t, objects{})
	entry := appsv1alpha1.PodProbe{Name: "web-1", Namespace: ns, UID: "u1", IP: "10.0.0.1",
		Probes: []appsv1alpha1.ContainerProbe{{Name: "m#tcp"}, {Name: "n#tcp"}, {Name: "EnhancedLiveness#main"}}}
	npp := gen.NodePodProbe(nodeName, gen.AddNodePodProbePod(entry))
	f.ctrl.nppChanged(nil, npp)
	assert.Equal(t, []string{nodeName}, f.queued())

	withStatus := gen.NodePodProbeFrom(npp, func(n *appsv1alpha1.NodePodProbe) {
		n.Status.PodProbeStatuses = []appsv1alpha1.PodProbeStatus{{Name: "web-1", Namespace: ns, UID: "u1"}}
	})
	f.ctrl.nppChanged(npp, withStatus)
	assert.Empty(t, f.queued(), "the daemon's status write")

	fewer := gen.NodePodProbeFrom(npp, func(n *appsv1alpha1.NodePodProbe) { n.Spec.PodProbes[0].Probes = n.Spec.PodProbes[0].Probes[1:] })
	f.ctrl.nppChanged(npp, fewer)
	assert.Equal(t, []string{nodeName, "ns/m"}, f.queued())
	f.ctrl.nppChanged(npp, nil)
	assert.Equal(t, []string{nodeName, "ns/m", "ns/n"}, f.queued())
}

// The pod index lists a node's pods.
func TestPodsOn(t *testing.T) {
	f := newFixture(t, objects{pods: []*corev1.Pod{probedPod("web-1", "u1", "10.0.0.1"),
		probedPod("web-2", "u2", "10.0.0.2", gen.SetPodNodeName("node-b")), probedPod("web-3", "u3", "", gen.SetPodNodeName(""))}})
	pods := f.ctrl.podsOn(nodeName)
	require.Len(t, pods, 1)
	assert.Equal(t, "web-1", pods[0].Name)
}
