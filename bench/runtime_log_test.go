//go:build bench

package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// runtimeLog is the container runtime's log on the local cluster (containerd's, info level). The
// CloneSet rollout report takes from it when the runtime was asked to stop each old container and
// when it had started each new one, to split a restart into the kubelet's part before the runtime,
// the runtime's, and the kubelet's after it.
var runtimeLog = envStr("BENCH_RUNTIME_LOG", "/var/tmp/kruise-local/logs/containerd.log")

// slowAfterStart: a restart whose pod turned Ready longer than this after the runtime started its
// new container waited at least one more of the kubelet's runtime relists (one a second).
const slowAfterStart = 900 * time.Millisecond

// runtimeTimes are, by container ID without its runtime scheme, the first StopContainer request
// and the first successful StartContainer the runtime logged.
type runtimeTimes struct{ stopping, started map[string]time.Time }

// readRuntimeLogFile reads path (see readRuntimeLog).
func readRuntimeLogFile(path string) (runtimeTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return runtimeTimes{}, err
	}
	defer f.Close()
	rt, err := readRuntimeLog(f)
	if err != nil {
		return rt, fmt.Errorf("reading %s: %w", path, err)
	}
	return rt, nil
}

// readRuntimeLog reads containerd's text log lines:
//
//	time="2026-11-28T06:58:24.756082043Z" level=info msg="StopContainer for \"<id>\" with timeout 10 (s)"
//	time="2026-11-28T06:57:28.235375088Z" level=info msg="StartContainer for \"<id>\" returns successfully"
func readRuntimeLog(r io.Reader) (runtimeTimes, error) {
	rt := runtimeTimes{stopping: map[string]time.Time{}, started: map[string]time.Time{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]time.Time
		switch {
		case strings.Contains(line, `msg="StopContainer for \"`) && strings.Contains(line, `\" with timeout`):
			into = rt.stopping
		case strings.Contains(line, `msg="StartContainer for \"`) && strings.Contains(line, `\" returns successfully`):
			into = rt.started
		default:
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, between(line, `time="`, `"`))
		id := between(line, `Container for \"`, `\"`)
		if err != nil || id == "" {
			continue
		}
		if _, seen := into[id]; !seen {
			into[id] = at
		}
	}
	return rt, sc.Err()
}

// between is the text of s after the first from and before the next to, "" without them.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, to)
	if !ok {
		return ""
	}
	return v
}

// slowCause says what held a restart that was slow after the runtime started its new container.
type slowCause int

const (
	notSlow slowCause = iota
	// slowRelist: the kubelet reported the new container one relist later (the runtime started
	// it after the relist that would have caught it had begun).
	slowRelist
	// slowGate: the new container was ready and InPlaceUpdateReady True, but the kubelet wrote
	// Ready=False for a readiness gate, computed from a copy of the pod older than the gate.
	slowGate
	// slowProbe: the new container was reported running, and ready a probe period later.
	slowProbe
)

// restartParts is one restart split at the runtime's two log lines.
type restartParts struct {
	toStopping time.Duration // begin → the runtime asked to stop the old container
	toStarted  time.Duration // → the runtime has started the new one
	toReady    time.Duration // → the pod seen Ready
	slow       slowCause
}

// parts splits p at the runtime's times of its two containers; false when the log lacks either or
// the times do not line up (a container ID from an earlier restart, another clock).
func (rt runtimeTimes) parts(p podRestart) (restartParts, bool) {
	stop, ok := rt.stopping[cri.RawContainerID(p.trace.oldID)]
	start, ok2 := rt.started[cri.RawContainerID(p.trace.newID)]
	if !ok || !ok2 || p.ready == 0 {
		return restartParts{}, false
	}
	stopAt, startAt := stop.Sub(p.t0), start.Sub(p.t0)
	if stopAt < 0 || startAt < stopAt || p.ready < startAt {
		return restartParts{}, false
	}
	out := restartParts{toStopping: stopAt - p.begin, toStarted: startAt - stopAt, toReady: p.ready - startAt}
	if out.toReady > slowAfterStart {
		switch {
		case p.trace.heldByGate:
			out.slow = slowGate
		case p.trace.ctrReady-p.trace.running > slowAfterStart/2:
			out.slow = slowProbe
		default:
			out.slow = slowRelist
		}
	}
	return out, true
}

// restartSummary is a table row over restarts: p50 / p90 of each part, and the slow ones by cause.
func (rt runtimeTimes) restartSummary(rs []podRestart) (string, bool) {
	var stopping, started, ready []time.Duration
	slow := map[slowCause]int{}
	for _, p := range rs {
		x, ok := rt.parts(p)
		if !ok {
			continue
		}
		stopping, started, ready = append(stopping, x.toStopping), append(started, x.toStarted), append(ready, x.toReady)
		slow[x.slow]++
	}
	if len(ready) == 0 {
		return "", false
	}
	return fmt.Sprintf("%s | %s | %s | %d / %d / %d of %d", spread(stopping), spread(started), spread(ready),
		slow[slowRelist], slow[slowGate], slow[slowProbe], len(ready)), true
}
