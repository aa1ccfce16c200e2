//go:build bench

package bench

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These need no cluster: go test -tags bench -run 'TestRestartTrace|TestFloorBatchFigures' ./bench/
func TestRestartTrace(t *testing.T) {
	pod := func(gen, observed int64, id string, running, gate bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: corev1.PodStatus{ObservedGeneration: observed}}
		st := corev1.ContainerStatus{Name: rolloutContainer, ContainerID: id}
		if running {
			st.State.Running = &corev1.ContainerStateRunning{}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		if gate {
			p.Status.Conditions = []corev1.PodCondition{{Type: "InPlaceUpdateReady", Status: corev1.ConditionTrue}}
		}
		return p
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }

	rt := restartTrace{gen0: 1, oldID: "c://old"}
	rt.see(pod(1, 1, "c://old", true, true), rolloutContainer, ms(10)) // before the update: nothing
	rt.see(pod(2, 1, "c://old", true, false), rolloutContainer, ms(20))
	rt.see(pod(2, 2, "c://old", false, false), rolloutContainer, ms(300)) // the kubelet's sync
	rt.see(pod(2, 2, "c://old", false, true), rolloutContainer, ms(400))  // gate released
	rt.see(pod(2, 2, "c://new", true, true), rolloutContainer, ms(1300))  // new container
	rt.see(pod(2, 2, "c://new", true, true), rolloutContainer, ms(2000))
	if d, ok := rt.toRunning(); !ok || d != ms(1000) {
		t.Errorf("toRunning = %v, %t; want 1s", d, ok)
	}
	if d := rt.gated - rt.synced; d != ms(100) {
		t.Errorf("sync → gate = %v, want 100ms", d)
	}

	// One event showing the sync and the new container bounds neither.
	rt = restartTrace{gen0: 1, oldID: "c://old"}
	rt.see(pod(2, 2, "c://new", true, false), rolloutContainer, ms(500))
	if d, ok := rt.toRunning(); ok {
		t.Errorf("toRunning = %v from one event, want none", d)
	}

	// A pod being deleted (its generation bumped by the deletion) is no restart.
	rt = restartTrace{gen0: 1, oldID: "c://old"}
	deleting := pod(2, 2, "c://old", true, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	rt.see(deleting, rolloutContainer, ms(100))
	if rt.synced != 0 || rt.gated != 0 {
		t.Errorf("a deleting pod counted as synced: %+v", rt)
	}
}

// The floor of M at once: a batch lasts until its last pod is Ready, and ceil(N/M) × the
// batches' mean is its total; sync → running counts only the runs that saw it apart.
func TestFloorBatchFigures(t *testing.T) {
	s := time.Second
	res := csResults{n: 30, m: 3, floorBatches: map[string][][]floorRun{phaseKruise: {
		{{ready: s}, {ready: s / 2, toRunning: s / 4}, {ready: s / 2}},
		{{ready: 2 * s, toRunning: s}, {ready: s}, {ready: s}},
		{{ready: s}, {ready: s}, {ready: s}},
	}}}
	total, batches := res.batchTotal(phaseKruise)
	if want := []time.Duration{s, 2 * s, s}; !slices.Equal(batches, want) {
		t.Errorf("batches %v, want %v", batches, want)
	}
	if want := 10 * 4 * s / 3; total != want {
		t.Errorf("total %v, want %v", total, want)
	}
	if got, want := floorToRunning(res.floorBatches[phaseKruise]...), []time.Duration{s / 4, s}; !slices.Equal(got, want) {
		t.Errorf("floorToRunning %v, want %v", got, want)
	}
	if total, _ := res.batchTotal(phaseOK); total != 0 {
		t.Errorf("a phase without batches has total %v", total)
	}
}
