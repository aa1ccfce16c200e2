//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// probeWindow is one steady window of the node-probe benchmark: CPU and memory of the processes
// it follows, the node's CPU, and the API server's write requests.
type probeWindow struct {
	from, to time.Time
	// procs: per role ("daemon", "kubelet", "containerd", ...), the share of one core used (%)
	// and VmRSS at the end.
	cpu map[string]float64
	rss map[string]int64
	// shims: containerd shims and what they reaped (runc exec, the probe commands), % of a core.
	shims float64
	// node: the whole node's busy share, in cores.
	node float64
	// writes: per minute, write requests the API server served for the resources of
	// probeResources, by "VERB group/resource[/subresource]", from all clients.
	writes map[string]float64
	// podUpdates: per minute, changes of the benchmark's pods its informer saw.
	podUpdates float64
}

// probeResources are the resources whose writes count as the probes' API load.
var probeResources = map[string]bool{
	"/pods": true, "/pods/status": true, "/events": true, "events.k8s.io/events": true,
	"apps.kruise.io/nodepodprobes": true, "apps.kruise.io/nodepodprobes/status": true,
	"apps.kruise.io/podprobemarkers": true, "apps.kruise.io/podprobemarkers/status": true,
}

func (w probeWindow) writeRate() float64 {
	var n float64
	for _, v := range w.writes {
		n += v
	}
	return n
}

func (w probeWindow) writeBreakdown() string {
	keys := make([]string, 0, len(w.writes))
	for k := range w.writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %.1f/min; ", k, w.writes[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// measureProbeWindow samples procs (role → PID), the shims, the node and the API server's
// counters at the start and the end of a window of length d; w counts pod updates.
func (e *env) measureProbeWindow(ctx context.Context, procs map[string]int, w *condWatch, d time.Duration) (probeWindow, error) {
	pw := probeWindow{cpu: map[string]float64{}, rss: map[string]int64{}, writes: map[string]float64{}}
	before, err := scrapeAPIServer(ctx, e.client)
	if err != nil {
		return pw, err
	}
	startSamples := map[string]procSample{}
	for role, pid := range procs {
		s, err := sampleProcess(pid)
		if err != nil {
			return pw, fmt.Errorf("sampling %s (pid %d): %w", role, pid, err)
		}
		startSamples[role] = s
	}
	shim0, err := shimsCPU()
	if err != nil {
		return pw, err
	}
	node0, err := nodeCPU()
	if err != nil {
		return pw, err
	}
	upd0 := 0
	if w != nil {
		upd0 = w.updateCount()
	}
	pw.from = time.Now()
	if err := runWindow(ctx, d); err != nil {
		return pw, err
	}
	pw.to = time.Now()
	secs := pw.to.Sub(pw.from).Seconds()
	for role, pid := range procs {
		s, err := sampleProcess(pid)
		if err != nil {
			return pw, fmt.Errorf("sampling %s (pid %d): %w", role, pid, err)
		}
		pw.cpu[role] = cpuPercent(startSamples[role], s)
		pw.rss[role] = s.rss
	}
	shim1, err := shimsCPU()
	if err != nil {
		return pw, err
	}
	node1, err := nodeCPU()
	if err != nil {
		return pw, err
	}
	pw.shims = 100 * (shim1 - shim0).Seconds() / secs
	pw.node = (node1 - node0).Seconds() / secs
	if w != nil {
		pw.podUpdates = float64(w.updateCount()-upd0) * 60 / secs
	}
	after, err := scrapeAPIServer(ctx, e.client)
	if err != nil {
		return pw, err
	}
	for k, v := range after.writes {
		_, res, _ := strings.Cut(k, " ")
		if d := v - before.writes[k]; d > 0 && probeResources[res] {
			pw.writes[k] = d * 60 / secs
		}
	}
	return pw, nil
}

// shimsCPU is the CPU time of every containerd-shim process, with that of the children it reaped
// (runc, and the exec'd probe commands).
func shimsCPU() (time.Duration, error) {
	pids, err := pidsByComm("containerd-shim")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended
		}
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 15 {
			continue
		}
		for _, idx := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			n, _ := strconv.ParseInt(f[idx], 10, 64)
			total += time.Duration(n) * time.Second / clockTicks
		}
	}
	return total, nil
}

// nodeCPU is the node's busy CPU time so far (all CPUs; /proc/stat, less idle and iowait).
func nodeCPU() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are inside user already
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// pidsByComm returns the PIDs of the processes whose comm starts with prefix.
func pidsByComm(prefix string) ([]int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		c, err := os.ReadFile(d + "/comm")
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(c)), prefix) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// readPIDFile reads a PID from the local cluster's pids directory.
func readPIDFile(name string) (int, error) {
	path := filepath.Join(probesPIDDir, name+".pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", path, err)
	}
	return pid, nil
}
