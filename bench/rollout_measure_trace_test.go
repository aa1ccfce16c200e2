//go:build bench

package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These need no cluster: go test -tags bench -run 'TestRestartTrace|TestFloorBatchFigures|TestRuntimeLog' ./bench/
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

// A restart split at the runtime's log: its lines parsed, the two containers found, the parts and
// the cause of a slow one told apart.
func TestRuntimeLogParts(t *testing.T) {
	log := `time="2026-11-28T07:00:00.100000000Z" level=info msg="StopContainer for \"old1\" with timeout 10 (s)"
time="2026-11-28T07:00:00.150000000Z" level=info msg="Stop container \"old1\" with signal terminated"
time="2026-11-28T07:00:00.400000000Z" level=info msg="StopContainer for \"old1\" returns successfully"
time="2026-11-28T07:00:00.450000000Z" level=info msg="StartContainer for \"new1\""
time="2026-11-28T07:00:00.700000000Z" level=info msg="StartContainer for \"new1\" returns successfully"
time="2026-11-28T07:00:09.000000000Z" level=info msg="StopContainer for \"old1\" with timeout 10 (s)"
time="bad" level=info msg="StopContainer for \"old2\" with timeout 10 (s)"
`
	rt, err := readRuntimeLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.stopping) != 1 || len(rt.started) != 1 {
		t.Fatalf("read %d stops and %d starts, want 1 and 1 (the first of each, bad times skipped)", len(rt.stopping), len(rt.started))
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	p := podRestart{t0: t0, begin: ms(20), ready: ms(1000),
		trace: restartTrace{oldID: "containerd://old1", newID: "containerd://new1", running: ms(950), ctrReady: ms(1000)}}
	x, ok := rt.parts(p)
	if !ok || x.toStopping != ms(80) || x.toStarted != ms(600) || x.toReady != ms(300) || x.slow != notSlow {
		t.Errorf("parts = %+v, %t; want 80ms, 600ms, 300ms, not slow", x, ok)
	}

	slow := func(tr restartTrace) slowCause {
		q := p
		q.ready, q.trace = ms(1800), tr
		q.trace.oldID, q.trace.newID = p.trace.oldID, p.trace.newID
		x, ok := rt.parts(q)
		if !ok {
			t.Fatalf("parts of %+v not found", q)
		}
		return x.slow
	}
	if c := slow(restartTrace{running: ms(1790), ctrReady: ms(1800)}); c != slowRelist {
		t.Errorf("reported running late: cause %d, want slowRelist", c)
	}
	if c := slow(restartTrace{running: ms(800), ctrReady: ms(1800)}); c != slowProbe {
		t.Errorf("ready a probe period after running: cause %d, want slowProbe", c)
	}
	if c := slow(restartTrace{running: ms(800), ctrReady: ms(850), heldByGate: true}); c != slowGate {
		t.Errorf("held by the gate: cause %d, want slowGate", c)
	}

	// A container the log does not have, or times out of order, give no parts.
	q := p
	q.trace.newID = "containerd://other"
	if _, ok := rt.parts(q); ok {
		t.Error("parts found for a container the log lacks")
	}
	q = p
	q.ready = ms(500) // Ready before the runtime started the container: another clock
	if _, ok := rt.parts(q); ok {
		t.Error("parts found for times out of order")
	}
	if row, ok := rt.restartSummary([]podRestart{p, q}); !ok || !strings.HasSuffix(row, "0 / 0 / 0 of 1") {
		t.Errorf("summary %q, %t; want one restart counted, none slow", row, ok)
	}
}

// A new container ready with the gate True while the kubelet still writes Ready=False for a
// readiness gate is recorded as held by the gate; the same with Ready=False for containers is not.
func TestRestartTraceHeldByGate(t *testing.T) {
	pod := func(readyReason string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: corev1.PodStatus{ObservedGeneration: 2,
			Conditions: []corev1.PodCondition{{Type: "InPlaceUpdateReady", Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: readyReason}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: rolloutContainer, ContainerID: "c://new", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	}
	rt := restartTrace{gen0: 1, oldID: "c://old"}
	rt.see(pod("ContainersNotReady"), rolloutContainer, time.Second)
	if rt.heldByGate || rt.newID != "c://new" || rt.ctrReady != time.Second {
		t.Errorf("after a containers-not-ready event: %+v", rt)
	}
	rt.see(pod("ReadinessGatesNotReady"), rolloutContainer, 2*time.Second)
	if !rt.heldByGate || rt.ctrReady != time.Second {
		t.Errorf("after a gates-not-ready event: %+v", rt)
	}
}

// The production shape: the main container first (the image patch changes containers[0]) and the
// only one at the changed image, an init container, a native sidecar with a readiness probe, and
// a per-pod claim of the default StorageClass mounted by all three; the minimal shape has none of
// them.
func TestPodShapes(t *testing.T) {
	if _, err := parsePodShape("huge"); err == nil {
		t.Error("an unknown shape parsed")
	}
	minimal := shapeMinimal.podSpec("img:new")
	if len(minimal.InitContainers) != 0 || len(minimal.Volumes) != 0 || len(minimal.Containers) != 1 {
		t.Errorf("minimal shape carries more than its container: %+v", minimal)
	}
	s := shapeProduction.podSpec("img:new")
	if len(s.Containers) != 1 || s.Containers[0].Name != rolloutContainer || s.Containers[0].Image != "img:new" || s.Containers[0].ReadinessProbe == nil {
		t.Fatalf("containers: %+v", s.Containers)
	}
	if len(s.InitContainers) != 2 {
		t.Fatalf("init containers: %+v", s.InitContainers)
	}
	work, sidecar := s.InitContainers[0], s.InitContainers[1]
	if work.RestartPolicy != nil || work.Image != image || !strings.Contains(strings.Join(work.Command, " "), "sleep 3") {
		t.Errorf("init container: %+v", work)
	}
	if sidecar.RestartPolicy == nil || *sidecar.RestartPolicy != corev1.ContainerRestartPolicyAlways || sidecar.ReadinessProbe == nil ||
		sidecar.Image != image || !strings.Contains(strings.Join(sidecar.Command, " "), "sleep 2") {
		t.Errorf("sidecar: %+v", sidecar)
	}
	if len(s.Volumes) != 1 || s.Volumes[0].Ephemeral == nil || s.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName != nil {
		t.Fatalf("volumes (want one generic ephemeral volume of the default class): %+v", s.Volumes)
	}
	for _, c := range []corev1.Container{s.Containers[0], work, sidecar} {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != s.Volumes[0].Name {
			t.Errorf("container %s does not mount the volume: %+v", c.Name, c.VolumeMounts)
		}
	}
	if tmpl := shapeProduction.template("app", "img:new"); tmpl.Labels[appLabel] != "app" || len(tmpl.Spec.InitContainers) != 2 {
		t.Errorf("template: %+v", tmpl)
	}
}
