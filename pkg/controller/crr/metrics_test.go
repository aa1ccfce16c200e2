package crr

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
	"github.com/nodekruise/kruise/test/unit/metrictest"
)

// completedNonZero is the kruise_crr_completed_total series above zero.
func (f *fixture) completedNonZero(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for k, v := range metrictest.Series(t, "kruise_crr_completed_total", f.ctrl.metrics.completed) {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestCompletedSeriesStartAtZero(t *testing.T) {
	f := newFixture(t, objects{})
	got := metrictest.Series(t, "kruise_crr_completed_total", f.ctrl.metrics.completed)
	want := map[string]float64{}
	for _, r := range []string{"Succeeded", "Failed", "DeadlineExceeded", "NoLiveDaemon", "PodGone", "PodReplaced", "InvalidRequest"} {
		want[`{reason="`+r+`"}`] = 0
	}
	assert.Equal(t, want, got)
}

// A request the daemon completes counts as Succeeded when every container
// was recreated, else Failed; only the transition to Completed counts.
func TestDaemonCompletionsCounted(t *testing.T) {
	failed := func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Status.ContainerRecreateStates[1].Phase = appsv1alpha1.ContainerRecreateRequestFailed
	}
	missing := func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Status.ContainerRecreateStates = c.Status.ContainerRecreateStates[:1]
	}
	cases := []struct {
		name     string
		old, cur *appsv1alpha1.ContainerRecreateRequest
		want     map[string]float64
	}{
		{"all recreated", admittedCRR(time.Minute), completedCRR(0), map[string]float64{`{reason="Succeeded"}`: 1}},
		{"one failed", admittedCRR(time.Minute), completedCRR(0, failed), map[string]float64{`{reason="Failed"}`: 1}},
		{"a container without state", admittedCRR(time.Minute), completedCRR(0, missing), map[string]float64{`{reason="Failed"}`: 1}},
		{"already completed", completedCRR(time.Second), completedCRR(0), map[string]float64{}},
		{"not completed", newCRR(time.Minute, "main"), admittedCRR(time.Minute), map[string]float64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{})
			f.ctrl.countCompletion(tc.old, tc.cur)
			assert.Equal(t, tc.want, f.completedNonZero(t))
		})
	}
}

// A note of the controller's own completion is consumed by the delivery,
// or dropped with the request.
func TestOwnCompletionNoteIsDropped(t *testing.T) {
	f := newFixture(t, objects{})
	crr := completedCRR(0)
	f.ctrl.ownCompletions.Store(crr.UID, ReasonPodGone)
	f.ctrl.forgetCompletion(crr)
	f.ctrl.countCompletion(admittedCRR(time.Minute), crr)
	assert.Equal(t, map[string]float64{`{reason="Succeeded"}`: 1}, f.completedNonZero(t))
}

// The gauge counts the admitted, unfinished requests of nodes without a live
// daemon, read at scrape time, and only while the controller runs.
func TestWaitingOnAbsentDaemon(t *testing.T) {
	onNode := func(name, node string, mods ...gen.CRRModifier) *appsv1alpha1.ContainerRecreateRequest {
		return admittedCRR(time.Minute, append([]gen.CRRModifier{func(c *appsv1alpha1.ContainerRecreateRequest) {
			c.Name, c.UID = name, types.UID("uid-"+name)
		}, gen.SetCRRRoutingLabels(node, podUID)}, mods...)...)
	}
	f := newFixture(t, objects{
		leases: []*coordinationv1.Lease{lease("node-a", 5*time.Second), lease("node-c", time.Minute)},
		crrs: []*appsv1alpha1.ContainerRecreateRequest{
			onNode("a1", "node-a"),
			onNode("b1", "node-b"), onNode("b2", "node-b"),
			onNode("b3", "node-b", gen.SetCRRPhase(appsv1alpha1.ContainerRecreateRequestCompleted)),
			onNode("c1", "node-c"),
		},
	})
	gauge := func() map[string]float64 {
		return metrictest.Series(t, "kruise_crr_waiting_on_absent_daemon", f.ctrl.metrics.waiting)
	}
	assert.Empty(t, gauge(), "nothing before Run (a standby, or caches not synced)")

	f.ctrl.running.Store(true)
	assert.Equal(t, map[string]float64{`{node="node-b"}`: 2, `{node="node-c"}`: 1}, gauge())

	// node-a's daemon stops renewing: once its lease duration has passed it counts too.
	f.clock.Step(daemonLiveFor)
	assert.Equal(t, map[string]float64{`{node="node-a"}`: 1, `{node="node-b"}`: 2, `{node="node-c"}`: 1}, gauge())

	f.ctrl.running.Store(false)
	assert.Empty(t, gauge(), "nothing once leadership is lost")
}
