package podorder_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodekruise/kruise/test/unit/gen"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// pod is a scheduled, running, ready pod created at t0 and ready since t0,
// changed by mods: every criterion equal until a case changes one.
func pod(name string, mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{
		gen.SetPodNamespace("default"),
		gen.SetPodNodeName("node-" + name),
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodCreationTimestamp(t0),
		readySince(t0),
	}
	return gen.Pod(name, append(base, mods...)...)
}

func readySince(at time.Time) gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: at},
	})
}

func notReady() gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
}

func onNode(node string) gen.PodModifier { return gen.SetPodNodeName(node) }

func labels(kv ...string) gen.PodModifier {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return gen.AddPodLabels(m)
}

func cost(v string) gen.PodModifier {
	return gen.AddPodAnnotations(map[string]string{corev1.PodDeletionCost: v})
}

func restarts(n int32) gen.PodModifier {
	return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "main", RestartCount: n})
}

func sidecarRestarts(n int32) gen.PodModifier {
	always := corev1.ContainerRestartPolicyAlways
	return func(p *corev1.Pod) {
		gen.AddPodInitContainer(corev1.Container{Name: "sidecar", RestartPolicy: &always})(p)
		gen.SetPodInitContainerStatus(corev1.ContainerStatus{Name: "sidecar", RestartCount: n})(p)
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func reversed(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[len(pods)-1-i] = p
	}
	return out
}

// rotations are pods in every rotation and reversed rotation: inputs in
// many orders, to show a result does not depend on the order given.
func rotations(pods []*corev1.Pod) [][]*corev1.Pod {
	var out [][]*corev1.Pod
	for r := range pods {
		rot := append(append([]*corev1.Pod{}, pods[r:]...), pods[:r]...)
		out = append(out, rot, reversed(rot))
	}
	return out
}

// assertUnchanged calls sort and checks that it changed neither the slice
// it was given nor any pod in it.
func assertUnchanged(t *testing.T, pods []*corev1.Pod, sort func([]*corev1.Pod)) {
	t.Helper()
	order := names(pods)
	copies := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		copies[i] = p.DeepCopy()
	}
	sort(pods)
	assert.Equal(t, order, names(pods), "the slice given was reordered")
	for i := range pods {
		require.Equal(t, copies[i], pods[i], "pod %s was changed", copies[i].Name)
	}
}

// fakeNodes is a NodeGetter over a fixed set of nodes.
type fakeNodes map[string]*corev1.Node

func (f fakeNodes) Get(name string) (*corev1.Node, error) {
	if n, ok := f[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

func nodesInZones(zoneOfNode map[string]string) fakeNodes {
	f := fakeNodes{}
	for node, zone := range zoneOfNode {
		f[node] = gen.Node(node, gen.AddNodeLabel(corev1.LabelTopologyZone, zone), gen.AddNodeLabel(corev1.LabelHostname, node))
	}
	return f
}

func indexOf(pods []*corev1.Pod, name string) int {
	for i, p := range pods {
		if p.Name == name {
			return i
		}
	}
	panic(fmt.Sprintf("no pod %s", name))
}
