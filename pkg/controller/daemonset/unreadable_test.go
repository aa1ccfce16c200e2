package daemonset

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// TestAPodWithAnUnreadableAnnotationDoesNotStallTheRollout: the pod on node c, the first the
// update takes, carries an in-place update grace record that does not decode. The pass does not
// fail: that pod is left and reported, and node b's pod is updated in place.
func TestAPodWithAnUnreadableAnnotationDoesNotStallTheRollout(t *testing.T) {
	inPlace := func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType
	}
	old := daemonSet("agent:1", inPlace)
	oldRev := revisionOf(t, old, 1)
	ds := daemonSet("agent:2", inPlace)
	var pods []*corev1.Pod
	for _, n := range []string{"a", "b", "c"} {
		pod := runningPod(t, old, oldRev, n)
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		pods = append(pods, pod)
	}
	pods[2].Annotations = map[string]string{pub.InPlaceUpdateGraceKey: "{not json"}
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a"), gen.Node("b"), gen.Node("c")}, []*appsv1.ControllerRevision{oldRev}, pods...)
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, testNS+"/"+ds.Name)
	require.NoError(t, err, "one pod's annotation fails no pass")

	assert.Equal(t, []string{"patch/status agent-b", "update agent-b"}, f.writes())
	events := strings.Join(drain(f.recorder), "\n")
	assert.Contains(t, events, "Warning "+inplace.EventReasonUnreadableAnnotation+" pod agent-c ")
	assert.Contains(t, events, pub.InPlaceUpdateGraceKey)
}

func TestPlanRollingLeavesHeldPods(t *testing.T) {
	now := t0.Add(time.Hour)
	heldNames := sets.New("c1", "b1")
	held := func(p *corev1.Pod) bool { return heldNames.Has(p.Name) }
	nodes := []NodeState{
		node("a", run, dpod("a1", "a", "v1", ready)),
		node("b", run, dpod("b1", "b", "v1")), // held and not available: counted, not replaced
		node("c", run, dpod("c1", "c", "v1", ready)),
		node("d", run, dpod("d1", "d", "v1", ready)),
	}
	p := PlanRolling(nodes, RollingOptions{UpdateRevision: "v2", MaxUnavailable: 2, Now: now, Held: held})
	assert.Equal(t, []string{"d1"}, names(p.Replace), "b1 uses one of the two; c1 is passed over")

	p = PlanRolling(nodes, RollingOptions{UpdateRevision: "v2", MaxSurge: 2, Now: now, Held: held})
	assert.Equal(t, []string{"d", "a"}, p.Surge)

	assert.ElementsMatch(t, []string{"d", "a"}, sets.List(UpdatableNodes(nodes, "v2", 0, nil, held)))
	assert.ElementsMatch(t, []string{"d"}, sets.List(UpdatableNodes(nodes, "v2", 3, nil, held)),
		"partition 3 of 4: one node moves, and it is not a held one")
}
