package rollout

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// A pod at its last batch shows as being updated in place until its gate is True for an update
// that is done; True with reason ContainersRestarting is the kubelet still replacing containers.
func TestInPlaceBatchLastBatch(t *testing.T) {
	state := gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"web-v2","updateTimestamp":null,` +
		`"lastContainerStatuses":{"main":{"imageID":"sha1"}},"containerBatchesRecord":[{"timestamp":null,"containers":["main"]}]}`})
	for _, tc := range []struct {
		name     string
		cond     corev1.PodCondition
		updating bool
	}{
		{"gate False", corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}, true},
		{"gate released to the kubelet", corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, Reason: pub.InPlaceUpdateRestartingReason}, true},
		{"gate True: done", corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, updating := inPlaceBatch(gen.Pod("web-0", state, gen.SetPodCondition(tc.cond)))
			if updating != tc.updating {
				t.Fatalf("updating = %v, want %v", updating, tc.updating)
			}
			if updating && (b.batch != 1 || len(b.containers) != 1 || b.containers[0] != "main") {
				t.Errorf("batch = %+v, want batch 1 of [main]", b)
			}
		})
	}
}

// A rollout is done once every updated pod is available, not only ready: an in-place updated pod
// is Ready a moment before the controller records its update done (and minReadySeconds before
// it is available).
func TestSnapshotDoneWaitsForAvailable(t *testing.T) {
	base := rolloutCounts{observed: true, desired: 3, total: 3, updated: 3, updatedReady: 3, updatedAvailable: 3, available: 3}
	for _, tc := range []struct {
		name   string
		change func(*rolloutCounts)
		done   bool
	}{
		{"all updated, ready, available", func(*rolloutCounts) {}, true},
		{"one updated pod ready, not yet available", func(c *rolloutCounts) { c.updatedAvailable, c.available = 2, 2 }, false},
		{"one updated pod not ready", func(c *rolloutCounts) { c.updatedReady = 2 }, false},
		{"status of an older spec", func(c *rolloutCounts) { c.observed = false }, false},
		{"partition 1: two to update", func(c *rolloutCounts) { c.partition, c.updated, c.updatedReady, c.updatedAvailable = 1, 2, 2, 2 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			if got := (snapshot{kind: "CloneSet", counts: c}).done(); got != tc.done {
				t.Errorf("done = %v, want %v (counts %+v)", got, tc.done, c)
			}
		})
	}
}
