//go:build bench

package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Where a rollout's time goes, from its pod events (client receipt times, sorted lists, so the
// i-th pod to go is paired with the i-th to come back):
//   - first: the first pod seen unavailable after the spec update (the controller's reaction);
//   - slot: the i-th pod gone unavailable → the i-th seen Ready at the new image, median (one
//     step's work: in place, the kubelet's restart plus the readiness gate's round trip);
//   - handover: the i-th pod Ready → the (i+M)-th gone unavailable, median (the controller
//     noticing a freed slot and starting the next pod);
//   - lag: the last pod Ready → the status showing the rollout done.
type rolloutBreakdown struct{ first, slot, handover, lag time.Duration }

func (res csResults) breakdownOf(r rolloutRun) rolloutBreakdown {
	b := rolloutBreakdown{lag: r.done - r.lastReady}
	if len(r.unready) > 0 {
		b.first = r.unready[0]
	}
	var slots, handovers []time.Duration
	for i := range min(len(r.unready), len(r.ready)) {
		slots = append(slots, r.ready[i]-r.unready[i])
	}
	for i := 0; i+res.m < len(r.unready) && i < len(r.ready); i++ {
		handovers = append(handovers, r.unready[i+res.m]-r.ready[i])
	}
	b.slot, b.handover = median(slots), median(handovers)
	return b
}

func (res csResults) breakdown(r rolloutRun) string {
	b := res.breakdownOf(r)
	return fmt.Sprintf("first unavailable %.3f s, step %.3f s, handover %.3f s, status lag %.3f s, kept %d",
		b.first.Seconds(), b.slot.Seconds(), b.handover.Seconds(), b.lag.Seconds(), r.kept)
}

// median is the nearest-rank median (0 for none).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return percentile(s, 0.5)
}

// batchReady is when the last pod of a floor batch was Ready again: the batch's restart.
func batchReady(rs []floorRun) time.Duration {
	var last time.Duration
	for _, r := range rs {
		last = max(last, r.ready)
	}
	return last
}

// batchTotal is ceil(N/M) × the phase's mean restart of M pods at once, with the batches'. The
// mean, not the median: with M at once the kubelet now and then starts the containers about a
// second late, and a rollout's steps add up the late ones too.
func (res csResults) batchTotal(phase string) (total time.Duration, batches []time.Duration) {
	var sum time.Duration
	for _, rs := range res.floorBatches[phase] {
		d := batchReady(rs)
		batches = append(batches, d)
		sum += d
	}
	if len(batches) == 0 {
		return 0, nil
	}
	steps := (res.n + res.m - 1) / res.m
	return time.Duration(steps) * sum / time.Duration(len(batches)), batches
}

// floorTotal is ceil(N/M) × the phase's median single-pod restart.
func (res csResults) floorTotal(phase string) (single, total time.Duration) {
	var ds []time.Duration
	for _, f := range res.floor[phase] {
		ds = append(ds, f.ready)
	}
	single = median(ds)
	steps := (res.n + res.m - 1) / res.m
	return single, time.Duration(steps) * single
}

func (res csResults) report(t *testing.T) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	pick := func(v csVariant, f func(rolloutRun) time.Duration) (med, lo, hi time.Duration) {
		var ds []time.Duration
		for _, r := range res.rollout[v] {
			ds = append(ds, f(r))
		}
		if len(ds) == 0 {
			return 0, 0, 0
		}
		return median(ds), slices.Min(ds), slices.Max(ds)
	}
	done := func(r rolloutRun) time.Duration { return r.done }
	variants := []csVariant{csInPlace, csRecreate, csDeploy, csOK}
	steps := (res.n + res.m - 1) / res.m

	var b strings.Builder
	fmt.Fprintf(&b, "\n%s pod; spec update → status: all %d pods updated, ready, available (watch event received); maxUnavailable %d (%d steps), maxSurge 0\n\n", res.shape, res.n, res.m, steps)
	fmt.Fprintf(&b, "| variant | rounds | median | min | max | last pod Ready (median) |\n| --- | --- | --- | --- | --- | --- |\n")
	med := map[csVariant]time.Duration{}
	for _, v := range variants {
		if len(res.rollout[v]) == 0 {
			continue
		}
		m, lo, hi := pick(v, done)
		med[v] = m
		last, _, _ := pick(v, func(r rolloutRun) time.Duration { return r.lastReady })
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", v, len(res.rollout[v]), sec(m), sec(lo), sec(hi), sec(last))
	}
	for _, phase := range []string{phaseKruise, phaseOK} {
		fs := res.floor[phase]
		if len(fs) == 0 {
			continue
		}
		var rs []time.Duration
		for _, f := range fs {
			rs = append(rs, f.ready)
		}
		_, total := res.floorTotal(phase)
		fmt.Fprintf(&b, "| floor, %s: %d × one restart (image patch of a bare pod → Ready; median of %d, min %s, max %s) | | %s | | | |\n",
			phase, steps, len(fs), sec(slices.Min(rs)), sec(slices.Max(rs)), sec(total))
		if bt, bs := res.batchTotal(phase); bt > 0 {
			fmt.Fprintf(&b, "| floor of %d at once, %s: %d × %d bare pods patched together → the last Ready (mean of %d, min %s, max %s) | | %s | | | |\n",
				res.m, phase, steps, res.m, len(bs), sec(slices.Min(bs)), sec(slices.Max(bs)), sec(bt))
		}
	}

	fmt.Fprintf(&b, "\nbreakdown, median over rounds (pod watch; see rolloutBreakdown)\n\n")
	fmt.Fprintf(&b, "| variant | first pod unavailable | step: unavailable → Ready | handover: Ready → next unavailable | status lag |\n| --- | --- | --- | --- | --- |\n")
	for _, v := range variants {
		if len(res.rollout[v]) == 0 {
			continue
		}
		cell := func(f func(rolloutBreakdown) time.Duration) string {
			m, _, _ := pick(v, func(r rolloutRun) time.Duration { return f(res.breakdownOf(r)) })
			return sec(m)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", v,
			cell(func(x rolloutBreakdown) time.Duration { return x.first }),
			cell(func(x rolloutBreakdown) time.Duration { return x.slot }),
			cell(func(x rolloutBreakdown) time.Duration { return x.handover }),
			cell(func(x rolloutBreakdown) time.Duration { return x.lag }))
	}
	for _, phase := range []string{phaseKruise, phaseOK} {
		if len(res.floor[phase]) == 0 {
			continue
		}
		single, _ := res.floorTotal(phase)
		var un []time.Duration
		for _, f := range res.floor[phase] {
			un = append(un, f.unready)
		}
		fmt.Fprintf(&b, "| floor pod, %s | %s | %s (patch → Ready) | – | – |\n", phase, sec(median(un)), sec(single))
	}
	fmt.Fprintf(&b, "%s", res.kubeletSyncTable(variants))
	fmt.Fprintf(&b, "%s", res.runtimeTable(variants))

	_, floorK := res.floorTotal(phaseKruise)
	_, floorO := res.floorTotal(phaseOK)
	batchK, _ := res.batchTotal(phaseKruise)
	fmt.Fprintf(&b, "\nratios of medians (same run)\n\n| ratio | value | target | |\n| --- | --- | --- | --- |\n")
	rows := []struct {
		name   string
		x, y   time.Duration
		target string
		met    func(float64) bool
	}{
		{"Deployment / kruise in-place (how many times faster)", med[csDeploy], med[csInPlace], "≥ 3", func(r float64) bool { return r >= 3 }},
		{"kruise in-place / OpenKruise in-place", med[csInPlace], med[csOK], "≤ 1", func(r float64) bool { return r <= 1 }},
		{"kruise in-place / floor (kruise phase)", med[csInPlace], floorK, "≤ 1.15", func(r float64) bool { return r <= 1.15 }},
		{"OpenKruise in-place / floor (OpenKruise phase)", med[csOK], floorO, "", nil},
		// The floor as a step restarts: M containers at once.
		{fmt.Sprintf("kruise in-place / floor of %d at once (kruise phase)", res.m), med[csInPlace], batchK, "", nil},
		{"kruise ReCreate / kruise in-place", med[csRecreate], med[csInPlace], "", nil},
		// What "≥ 3" can reach on this node: an in-place update that cost no more than the floor.
		{"Deployment / floor (kruise phase: the most any in-place update can be faster)", med[csDeploy], floorK, "", nil},
		{"floor, OpenKruise phase / kruise phase (machine drift)", floorO, floorK, "", nil},
	}
	for _, r := range rows {
		if r.x == 0 || r.y == 0 {
			fmt.Fprintf(&b, "| %s | – (not measured) | %s | |\n", r.name, r.target)
			continue
		}
		v, ok := r.x.Seconds()/r.y.Seconds(), "–"
		if r.met != nil {
			ok = verdict(r.met(v))
		}
		fmt.Fprintf(&b, "| %s | %.3f | %s | %s |\n", r.name, v, r.target, ok)
	}
	t.Log(b.String())
}

// kubeletSyncTable is, for the variants that update pods in place, where a step's time goes after
// the kubelet's sync of the update (rolloutRun.toRunning, toGate), over the pods of all rounds.
func (res csResults) kubeletSyncTable(variants []csVariant) string {
	var b strings.Builder
	for _, v := range variants {
		var run, gate []time.Duration
		for _, r := range res.rollout[v] {
			run, gate = append(run, r.toRunning...), append(gate, r.toGate...)
		}
		if len(run) == 0 && len(gate) == 0 {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\nin place, per pod over all rounds: from the kubelet's sync of the update (observedGeneration seen)\n\n")
			fmt.Fprintf(&b, "| variant | → new container running: p50 / p90 (pods) | → InPlaceUpdateReady True: p50 / p90 (pods) |\n| --- | --- | --- |\n")
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", v, spread(run), spread(gate))
	}
	if b.Len() == 0 {
		return ""
	}
	for _, phase := range []string{phaseKruise, phaseOK} {
		if run := floorToRunning(res.floor[phase]); len(run) > 0 {
			fmt.Fprintf(&b, "| floor pod, %s (one restart at a time) | %s | – |\n", phase, spread(run))
		}
		if run := floorToRunning(res.floorBatches[phase]...); len(run) > 0 {
			fmt.Fprintf(&b, "| floor pods, %s (%d at once) | %s | – |\n", phase, res.m, spread(run))
		}
	}
	return b.String()
}

// floorToRunning is the floor runs' kubelet sync → new container running, where seen.
func floorToRunning(runs ...[]floorRun) []time.Duration {
	var out []time.Duration
	for _, f := range slices.Concat(runs...) {
		if f.toRunning > 0 {
			out = append(out, f.toRunning)
		}
	}
	return out
}

// floorRestarts is the floor runs' restarts, for the runtime's log.
func floorRestarts(runs ...[]floorRun) []podRestart {
	var out []podRestart
	for _, f := range slices.Concat(runs...) {
		out = append(out, f.restart)
	}
	return out
}

// spread is "p50 / p90 (n)" of ds, or "–" for none.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.3f s / %.3f s (%d)", percentile(s, 0.5).Seconds(), percentile(s, 0.9).Seconds(), len(s))
}

// runtimeTable splits each restart in place, and each floor restart, at the runtime's log
// (runtimeLog): what the kubelet does before the runtime acts (a rollout's restart begins when the
// pod is seen unavailable, a floor's at the patch), what the runtime does, and what the kubelet
// does after (its relist, the probe, the readiness gate), with the slow ones by cause.
func (res csResults) runtimeTable(variants []csVariant) string {
	rt, err := readRuntimeLogFile(runtimeLog)
	if err != nil {
		return fmt.Sprintf("\nthe runtime's log was not read (%v): no split of the restarts\n", err)
	}
	var b strings.Builder
	row := func(name string, rs []podRestart) {
		if cells, ok := rt.restartSummary(rs); ok {
			fmt.Fprintf(&b, "| %s | %s |\n", name, cells)
		}
	}
	for _, v := range []csVariant{csInPlace, csOK} {
		if !slices.Contains(variants, v) {
			continue
		}
		var rs []podRestart
		for _, r := range res.rollout[v] {
			rs = append(rs, r.restarts...)
		}
		row(string(v), rs)
	}
	for _, phase := range []string{phaseKruise, phaseOK} {
		row(fmt.Sprintf("floor pod, %s (one restart at a time)", phase), floorRestarts(res.floor[phase]))
		row(fmt.Sprintf("floor pods, %s (%d at once)", phase, res.m), floorRestarts(res.floorBatches[phase]...))
	}
	if b.Len() == 0 {
		return "\nno restart found in the runtime's log " + runtimeLog + "\n"
	}
	return fmt.Sprintf("\nper restart, split at the runtime's log (%s): p50 / p90 (restarts)\n\n", runtimeLog) +
		"| restart | begin → runtime stopping the old container | → runtime started the new one | → pod Ready | → Ready over 0.9 s: missed relist / Ready held by the gate / late probe |\n| --- | --- | --- | --- | --- |\n" +
		b.String()
}
