//go:build bench

package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
)

// The launch-priority pod: three containers, priorities 2, 1, 0 (or none in the baseline).
var lpLevels = []struct {
	name, prio, key string
}{{"p2", "2", lp.KeyPrefix + "2"}, {"p1", "1", lp.KeyPrefix + "1"}, {"p0", "0", lp.KeyPrefix + "0"}}

func lpContainers(prioritised bool) []ctr {
	out := make([]ctr, 0, len(lpLevels))
	for _, l := range lpLevels {
		c := ctr{name: l.name}
		if prioritised {
			c.env = priorityEnv(l.prio)
		}
		out = append(out, c)
	}
	return out
}

type lpArm string

const (
	lpOursBase lpArm = "kruise phase, no priority (floor)"
	lpOurs     lpArm = "kruise, priorities 2,1,0"
	lpOKBase   lpArm = "OpenKruise phase, no priority (floor)"
	lpOK       lpArm = "OpenKruise v1.9.0, priorities 2,1,0"
)

// TestLaunchPriorityLatency measures pod create → all containers Ready for a pod of three
// containers at launch priorities 2, 1, 0, against the same pod with no priority (the
// kubelet's floor), with kruise, then with OpenKruise v1.9.0 on the same cluster in the same run
// (see startOpenKruise), and checks the containers started in priority order.
func TestLaunchPriorityLatency(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-lp", "bench-launchpriority")
	build, err := buildOpenKruise(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}

	samples := map[lpArm][]podRun{}
	seq := 0
	run := func(ns string, a lpArm, timed bool) {
		t.Helper()
		seq++
		prioritised := a == lpOurs || a == lpOK
		name := fmt.Sprintf("lp-%03d", seq)
		r, err := e.runPod(ctx, benchPod(ns, name, lpContainers(prioritised)), prioritised)
		defer e.deletePodIn(ns, name)
		if err != nil {
			t.Fatalf("%s (%s): %v", name, a, err)
		}
		if err := checkLaunchOrder(a, r); err != nil {
			t.Fatalf("%s (%s): %v", name, a, err)
		}
		if timed {
			samples[a] = append(samples[a], r)
		}
		t.Logf("%s %-38s ready %6.3f s  started p2 %6.3f p1 %6.3f p0 %6.3f  keys %s", name, a, r.ready.Seconds(),
			r.since("p2").Seconds(), r.since("p1").Seconds(), r.since("p0").Seconds(), keyTimes(r))
	}
	rounds := func(ns string, arms []lpArm) {
		for _, a := range arms {
			run(ns, a, false) // warm-up
		}
		for i := 0; i < iterations; i++ {
			for k := range arms {
				run(ns, arms[(i+k)%len(arms)], true)
			}
		}
	}

	start := time.Now()
	rounds(e.ns, []lpArm{lpOursBase, lpOurs})
	t.Logf("kruise phase: %s", time.Since(start).Round(time.Second))

	start = time.Now()
	ok, err := e.startOpenKruise(ctx, t, build)
	t.Cleanup(func() {
		if ok == nil {
			return
		}
		if err := ok.stop(context.Background()); err != nil {
			t.Errorf("after the OpenKruise phase: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rounds(ok.ns, []lpArm{lpOKBase, lpOK})
	t.Logf("OpenKruise phase: %s (set-up included)", time.Since(start).Round(time.Second))
	start = time.Now()
	err = ok.stop(ctx)
	ok = nil
	if err != nil {
		t.Errorf("after the OpenKruise phase: %v", err)
	}
	t.Logf("OpenKruise phase undone, kruise-controller leading again: %s", time.Since(start).Round(time.Second))
	reportLaunchPriority(t, samples)
}

// checkLaunchOrder checks the arm's containers: with priorities, the runtime started p2, p1,
// p0 strictly in that order, and the barriers are where the arm's webhook puts them.
func checkLaunchOrder(a lpArm, r podRun) error {
	for i, l := range lpLevels {
		has := hasEnv(r.created, i, lp.EnvBarrier)
		// kruise holds back only what waits; OpenKruise gives every container a barrier.
		want := a == lpOK || (a == lpOurs && i > 0)
		if has != want {
			return fmt.Errorf("container %s has %s: %t, want %t", l.name, lp.EnvBarrier, has, want)
		}
	}
	if a != lpOurs && a != lpOK {
		return nil
	}
	for i := 1; i < len(lpLevels); i++ {
		hi, lo := lpLevels[i-1].name, lpLevels[i].name
		if !r.started[hi].Before(r.started[lo]) {
			return fmt.Errorf("container %s started at %s, not after %s (%s)", lo, r.started[lo].Format(time.RFC3339Nano), hi, r.started[hi].Format(time.RFC3339Nano))
		}
	}
	return nil
}

func keyTimes(r podRun) string {
	if r.keyAt == nil {
		return "-"
	}
	var parts []string
	for _, l := range lpLevels {
		if d, ok := r.keyAt[l.key]; ok {
			parts = append(parts, fmt.Sprintf("%s %.3f", l.key, d.Seconds()))
		}
	}
	return strings.Join(parts, " ")
}

func reportLaunchPriority(t *testing.T, samples map[lpArm][]podRun) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	ready := func(r podRun) time.Duration { return r.ready }
	arms := []lpArm{lpOursBase, lpOurs, lpOKBase, lpOK}
	var b strings.Builder
	fmt.Fprintf(&b, "\ncreate → all containers Ready (pod Ready=True watch event), 3 containers, one pod at a time\n\n")
	fmt.Fprintf(&b, "| arm | n | p50 | p99 | min | max |\n| --- | --- | --- | --- | --- | --- |\n")
	st := map[lpArm]pct{}
	for _, a := range arms {
		s := pcts(samples[a], ready)
		st[a] = s
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", a, len(samples[a]), sec(s.p50), sec(s.p99), sec(s.min), sec(s.max))
	}
	ratio := func(x, y time.Duration) string {
		if y == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", x.Seconds()/y.Seconds())
	}
	fmt.Fprintf(&b, "\nratios (same run)\n\n| pair | p50 | p99 |\n| --- | --- | --- |\n")
	for _, p := range [][2]lpArm{{lpOurs, lpOK}, {lpOursBase, lpOKBase}, {lpOurs, lpOursBase}, {lpOK, lpOKBase}} {
		fmt.Fprintf(&b, "| %s / %s | %s | %s |\n", p[0], p[1], ratio(st[p[0]].p50, st[p[1]].p50), ratio(st[p[0]].p99, st[p[1]].p99))
	}

	// Where the time goes, per released level: the controller's reaction (the higher container
	// seen Ready → its key seen) and the kubelet's (key seen → the container started).
	fmt.Fprintf(&b, "\nbreakdown, p50 / p99 (client receipt times of watch events; starts from the runtime)\n\n")
	fmt.Fprintf(&b, "| arm | first container started | top key seen | %s Ready seen → %s key seen (controller) | %s key seen → %s started (kubelet) | %s Ready seen → %s key seen | %s key seen → %s started |\n| --- | --- | --- | --- | --- | --- | --- |\n",
		"p2", lp.KeyPrefix+"1", lp.KeyPrefix+"1", "p1", "p1", lp.KeyPrefix+"0", lp.KeyPrefix+"0", "p0")
	for _, a := range []lpArm{lpOurs, lpOK} {
		rs := samples[a]
		cell := func(f func(podRun) time.Duration) string {
			s := pcts(rs, f)
			return sec(s.p50) + " / " + sec(s.p99)
		}
		top := "– (no barrier)"
		if a == lpOK {
			top = cell(func(r podRun) time.Duration { return r.keyAt[lpLevels[0].key] })
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", a,
			cell(func(r podRun) time.Duration { return r.since("p2") }), top,
			cell(func(r podRun) time.Duration { return r.keyAt[lpLevels[1].key] - r.ctrReady["p2"] }),
			cell(func(r podRun) time.Duration { return r.since("p1") - r.keyAt[lpLevels[1].key] }),
			cell(func(r podRun) time.Duration { return r.keyAt[lpLevels[2].key] - r.ctrReady["p1"] }),
			cell(func(r podRun) time.Duration { return r.since("p0") - r.keyAt[lpLevels[2].key] }))
	}
	t.Log(b.String())
}
