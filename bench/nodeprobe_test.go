//go:build bench

package bench

// The node-probe benchmark (BENCHMARKS.md, "Node probes"; `make bench-probes`, never in CI).
//
// What it needs: the shared local cluster (hack/cluster.sh: one real node with containerd and a
// kubelet, the loopback registry with busybox, the audit log) with kruise deployed (`make
// deploy`, which the make target runs), held for its whole run under /tmp/kruise-cluster.lock
// (about 15 minutes):
//
//	flock /tmp/kruise-cluster.lock make bench-probes
//
// run as root on the node (it reads /proc of the kubelet, containerd and the daemons, and execs
// through CRI), with the Go module proxy reachable the first time (OpenKruise v1.9.0's
// kruise-manager and kruise-daemon are built from it into /var/tmp/kruise-bench-cache).
//
// What it does, in one run on the one node, one configuration after another:
//
//  1. idle: probesPods pods of two containers each (busybox, sleeping; each container creates
//     /tmp/ready), no probe at all: the kubelet's (and kruise-daemon's) CPU and RSS over a window.
//  2. kruise: a PodProbeMarker with two exec probes (`cat /tmp/ready` in c0 and in c1, period
//     1 s, a podConditionType and a marker label each) over those pods: kruise-daemon's and
//     kruise-controller's CPU and RSS over a steady window, the API server's writes in it, then
//     the flip latency: c0's /tmp/ready removed (CRI exec) in probesFlips pods at once → the
//     pod condition False (watch receipt), and recreated → True, probesRounds times.
//  3. OpenKruise v1.9.0: the same PodProbeMarker, with kruise-controller fenced and kruise-daemon
//     off the node, run by OpenKruise's kruise-manager and kruise-daemon as host processes.
//  4. kubelet: the pods replaced by probesPods pods whose two containers have the same command
//     as readiness probes (period 1 s): the kubelet's CPU and RSS over a steady window (its
//     extra over the idle window is the floor), writes, and the flip → Ready False/True latency.
//
// Besides each configuration's own process, every window records containerd's CPU, the
// containerd shims' (with the runc and probe processes they reap: the execs' real cost, the same
// in every configuration) and the whole node's, and the load average, so a reader sees how busy
// the two-core machine was.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Settings of the node-probe benchmark, overridable from the environment.
var (
	probesPods   = envInt("BENCH_PROBES_PODS", 100)
	probesFlips  = envInt("BENCH_PROBES_FLIPS", 20)
	probesRounds = envInt("BENCH_PROBES_ROUNDS", 2)
	probesWindow = time.Duration(envInt("BENCH_PROBES_WINDOW_SECONDS", 60)) * time.Second
	probesSettle = time.Duration(envInt("BENCH_PROBES_SETTLE_SECONDS", 15)) * time.Second
	probesPIDDir = envStr("BENCH_PIDS_DIR", "/var/tmp/kruise-local/pids")
	// "0" leaves a configuration out.
	probesKruise     = envStr("BENCH_PROBES_KRUISE", "1") != "0"
	probesOpenKruise = envStr("BENCH_PROBES_OPENKRUISE", "1") != "0"
	probesKubelet    = envStr("BENCH_PROBES_KUBELET", "1") != "0"
	// probesTarget is the flip → condition latency target: one period + 200 ms.
	probesTarget = 1200 * time.Millisecond
)

const (
	probesPPM = "bench-probes"
	readyCond = corev1.PodConditionType("bench.kruise.io/ready")
	idleCond  = corev1.PodConditionType("bench.kruise.io/idle")
	plainSet  = "plain"
	kubelSet  = "kubelet"
)

// probeRun is what one configuration measured.
type probeRun struct {
	name string
	// main is the role of the process the configuration is about ("daemon", "kubelet").
	main     string
	window   probeWindow
	before   int64         // main's VmRSS before the configuration's probes started
	markedIn time.Duration // PodProbeMarker created → every pod's two conditions True
	flips    []flipResult  // both directions
	down, up []flipResult
	audit    string // kruise-system service accounts' writes in the window (kruise only)
	extraCPU float64
	extraRSS int64
}

func TestNodeProbes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	e := connect(ctx, t, "bench-probes", "bench-probes")
	t.Logf("shape: %d pods × 2 exec probes (cat %s), period 1 s, on %s; %d flips × %d rounds each way; window %s after %s settling; kruise %t, OpenKruise %t, kubelet %t",
		probesPods, probeFile, footprintNode, probesFlips, probesRounds, probesWindow, probesSettle, probesKruise, probesOpenKruise, probesKubelet)
	logLoad(t, "start")

	var okBuild openKruiseBuild
	var okDaemon string
	if probesOpenKruise {
		var err error
		if okBuild, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
		if okDaemon, err = buildOpenKruiseDaemon(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}
	kubeletPID, err := readPIDFile("kubelet")
	if err != nil {
		t.Fatal(err)
	}
	containerdPID, err := readPIDFile("containerd")
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]int{"kubelet": kubeletPID, "containerd": containerdPID}

	// 1. idle: the pods, no probes.
	pods := e.createProbePods(ctx, t, plainSet, false)
	ctrIDs, err := e.flipContainerIDs(ctx, pods)
	if err != nil {
		t.Fatal(err)
	}
	idleProcs := withRoles(base, nil)
	if probesKruise {
		idleProcs = withRoles(base, e.kruiseProcs(ctx, t))
	}
	settle(ctx, t, "idle")
	idle, err := e.measureProbeWindow(ctx, idleProcs, nil, probesWindow)
	if err != nil {
		t.Fatal(err)
	}
	logWindow(t, "idle (no probes)", idle)

	var runs []*probeRun
	// 2. kruise.
	if probesKruise {
		procs := withRoles(base, e.kruiseProcs(ctx, t))
		r := e.runPPM(ctx, t, "kruise", procs, pods, ctrIDs, true)
		runs = append(runs, r)
	}
	// 3. OpenKruise.
	if probesOpenKruise {
		r := e.runOpenKruisePPM(ctx, t, okBuild, okDaemon, base, pods, ctrIDs)
		runs = append(runs, r)
	}
	// 4. kubelet.
	if probesKubelet {
		e.deleteProbePods(ctx, t, plainSet)
		kpods := e.createProbePods(ctx, t, kubelSet, true)
		kids, err := e.flipContainerIDs(ctx, kpods)
		if err != nil {
			t.Fatal(err)
		}
		w, err := e.watchConds(ctx, kubelSet, corev1.PodReady)
		if err != nil {
			t.Fatal(err)
		}
		r := &probeRun{name: "kubelet", main: "kubelet"}
		settle(ctx, t, "kubelet")
		if r.window, err = e.measureProbeWindow(ctx, base, w, probesWindow); err != nil {
			t.Fatal(err)
		}
		logWindow(t, "kubelet readiness probes", r.window)
		r.extraCPU = r.window.cpu["kubelet"] - idle.cpu["kubelet"]
		r.extraRSS = r.window.rss["kubelet"] - idle.rss["kubelet"]
		e.runFlips(ctx, t, r, w, kpods, kids, corev1.PodReady)
		w.close()
		runs = append(runs, r)
	}

	reportProbes(t, idle, runs)
}

// kruiseProcs are kruise-daemon's (on the node) and kruise-controller's processes by role.
func (e *env) kruiseProcs(ctx context.Context, t *testing.T) map[string]int {
	t.Helper()
	d := daemonPodOn(ctx, t, e, footprintNode)
	pid, err := findPodProcess(daemonComm, d.Name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{"daemon": pid}
	ctls, err := pidsByComm("kruise-controll")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ctls {
		out[fmt.Sprintf("controller-%d", i)] = p
	}
	return out
}

func withRoles(base, more map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// probeMarker is the benchmark's PodProbeMarker: probes "ready" (c0) and "idle" (c1), each
// `cat /tmp/ready` every second, each with a pod condition and a marker label per state.
func probeMarker(ns string) *appsv1alpha1.PodProbeMarker {
	probe := func(name, ctr string, cond corev1.PodConditionType) appsv1alpha1.PodContainerProbe {
		return appsv1alpha1.PodContainerProbe{
			Name: name, ContainerName: ctr,
			Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", probeFile}}},
				PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
			}},
			PodConditionType: string(cond),
			MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{
				{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{string(cond): "true"}},
				{State: appsv1alpha1.ProbeFailed, Labels: map[string]string{string(cond): "false"}},
			},
		}
	}
	return &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: probesPPM, Namespace: ns},
		Spec: appsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{probesLabel: plainSet}},
			Probes:   []appsv1alpha1.PodContainerProbe{probe("ready", "c0", readyCond), probe("idle", "c1", idleCond)},
		},
	}
}

// runPPM runs one PodProbeMarker configuration on pods: creates the marker, waits for every
// pod's two conditions True, lets it settle, measures the steady window, flips, and deletes the
// marker (waiting until it is gone: its finalizer is the controller's).
func (e *env) runPPM(ctx context.Context, t *testing.T, name string, procs map[string]int, pods []*corev1.Pod,
	ctrIDs map[types.UID]string, audit bool) *probeRun {
	t.Helper()
	r := &probeRun{name: name, main: "daemon"}
	w, err := e.watchConds(ctx, plainSet, readyCond, idleCond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if m, err := readMemory(procs["daemon"]); err == nil {
		r.before = m.rss
	}
	ppms := e.kruise.AppsV1alpha1().PodProbeMarkers(e.ns)
	t0 := time.Now()
	if _, err := ppms.Create(ctx, probeMarker(e.ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer e.deletePPM(t)
	last, err := w.waitAll(ctx, podNames(pods), corev1.ConditionTrue, 5*time.Minute)
	if err != nil {
		t.Fatalf("%s: every pod's two conditions True: %v", name, err)
	}
	r.markedIn = last.Sub(t0)
	t.Logf("%s: PodProbeMarker created → %d pods × 2 conditions True in %s", name, len(pods), r.markedIn.Round(time.Millisecond))
	settle(ctx, t, name)
	if r.window, err = e.measureProbeWindow(ctx, procs, w, probesWindow); err != nil {
		t.Fatal(err)
	}
	logWindow(t, name+" PodProbeMarker", r.window)
	if audit {
		r.audit = kruiseWrites(t, r.window)
		t.Logf("%s: kruise-system service accounts' writes in the window (audit log): %s", name, r.audit)
	}
	e.runFlips(ctx, t, r, w, pods, ctrIDs, readyCond)
	e.deletePPM(t)
	return r
}

// deletePPM deletes the benchmark's PodProbeMarker (if any) and waits until it is gone.
func (e *env) deletePPM(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ppms := e.kruise.AppsV1alpha1().PodProbeMarkers(e.ns)
	if err := ignoreNotFound(ppms.Delete(ctx, probesPPM, metav1.DeleteOptions{})); err != nil {
		t.Errorf("deleting PodProbeMarker: %v", err)
		return
	}
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := ppms.Get(ctx, probesPPM, metav1.GetOptions{})
		return ignoreNotFound(err) == nil && err != nil, nil
	}); err != nil {
		t.Errorf("PodProbeMarker %s/%s not gone (its finalizer): %v", e.ns, probesPPM, err)
	}
}

// runOpenKruisePPM is runPPM with OpenKruise's manager and daemon up for the phase.
func (e *env) runOpenKruisePPM(ctx context.Context, t *testing.T, b openKruiseBuild, daemonBin string, base map[string]int,
	pods []*corev1.Pod, ctrIDs map[types.UID]string) *probeRun {
	t.Helper()
	start := time.Now()
	o, err := e.startOpenKruiseProbes(ctx, t, b, daemonBin)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		e.deletePPM(t) // while its controller can take its finalizer off
		if err := o.stop(context.Background()); err != nil {
			t.Errorf("ending the OpenKruise phase: %v", err)
		}
	}
	defer stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("OpenKruise manager and daemon up, kruise fenced and off the node: %s", time.Since(start).Round(time.Second))
	mgr, dmn := o.pids()
	r := e.runPPM(ctx, t, "OpenKruise v1.9.0", withRoles(base, map[string]int{"daemon": dmn, "controller-0": mgr}), pods, ctrIDs, false)
	start = time.Now()
	stop()
	t.Logf("OpenKruise stopped, kruise back: %s", time.Since(start).Round(time.Second))
	return r
}

// runFlips flips c0's probe file in the first probesFlips pods, probesRounds times each way, and
// records the latencies to typ False and back to True.
func (e *env) runFlips(ctx context.Context, t *testing.T, r *probeRun, w *condWatch, pods []*corev1.Pod,
	ctrIDs map[types.UID]string, typ corev1.PodConditionType) {
	t.Helper()
	n := min(probesFlips, len(pods))
	for round := range probesRounds {
		down, err := w.flip(ctx, e.rt, pods[:n], ctrIDs, []string{"rm", "-f", probeFile}, typ, corev1.ConditionFalse, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		up, err := w.flip(ctx, e.rt, pods[:n], ctrIDs, []string{"touch", probeFile}, typ, corev1.ConditionTrue, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r.down = append(r.down, down...)
		r.up = append(r.up, up...)
		t.Logf("%s: round %d: → False %s; → True %s", r.name, round+1, flipSummary(down), flipSummary(up))
	}
	r.flips = append(append([]flipResult{}, r.down...), r.up...)
}

// flipSummary is "p50 x p99 y max z (n missed)" of the flips that were followed.
func flipSummary(fs []flipResult) string {
	var ds, execs, afters []time.Duration
	missed := 0
	for _, f := range fs {
		if !f.ok {
			missed++
			continue
		}
		ds = append(ds, f.latency)
		execs = append(execs, f.exec)
		afters = append(afters, f.latency-f.exec)
	}
	if len(ds) == 0 {
		return fmt.Sprintf("none followed (%d missed)", missed)
	}
	slices.Sort(ds)
	slices.Sort(execs)
	slices.Sort(afters)
	// The file changes somewhere inside the exec call: from its return is a lower bound.
	s := fmt.Sprintf("p50 %s p99 %s max %s (exec p50 %s; from the exec's return p50 %s p99 %s)",
		msec(percentile(ds, 0.5)), msec(percentile(ds, 0.99)), msec(ds[len(ds)-1]), msec(percentile(execs, 0.5)),
		msec(percentile(afters, 0.5)), msec(percentile(afters, 0.99)))
	if missed > 0 {
		s += fmt.Sprintf(", %d not followed within 30 s", missed)
	}
	return s
}

func flipPcts(fs []flipResult) (p50, p99 time.Duration, missed int) {
	var ds []time.Duration
	for _, f := range fs {
		if f.ok {
			ds = append(ds, f.latency)
		} else {
			missed++
		}
	}
	if len(ds) == 0 {
		return 0, 0, missed
	}
	slices.Sort(ds)
	return percentile(ds, 0.5), percentile(ds, 0.99), missed
}

func msec(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func settle(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: settling %s", what, probesSettle)
	if err := runWindow(ctx, probesSettle); err != nil {
		t.Fatal(err)
	}
}

// logLoad logs the node's load average.
func logLoad(t *testing.T, when string) {
	t.Helper()
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Logf("load average (%s): %v", when, err)
		return
	}
	t.Logf("load average (%s): %s", when, strings.TrimSpace(string(raw)))
}

func logWindow(t *testing.T, name string, w probeWindow) {
	t.Helper()
	roles := make([]string, 0, len(w.cpu))
	for k := range w.cpu {
		roles = append(roles, k)
	}
	slices.Sort(roles)
	var b strings.Builder
	for _, k := range roles {
		fmt.Fprintf(&b, "%s %.2f%% of a core, RSS %s; ", k, w.cpu[k], mib(w.rss[k]))
	}
	t.Logf("%s window %s: %s shims+execs %.1f%%, node busy %.2f of 2 cores; writes %.1f/min (%s); benchmark pods changed %.1f/min",
		name, w.to.Sub(w.from).Round(time.Second), b.String(), w.shims, w.node, w.writeRate(), w.writeBreakdown(), w.podUpdates)
	logLoad(t, "end of "+name+" window")
}

// kruiseWrites summarises the write requests of kruise-system's service accounts in w (Leases
// apart: the daemons' heartbeats and leader election) from the audit log.
func kruiseWrites(t *testing.T, w probeWindow) string {
	t.Helper()
	evs, err := auditRequests(w.from, w.to, func(ev *auditEvent) bool {
		if !strings.HasPrefix(ev.User.Username, "system:serviceaccount:kruise-system:") {
			return false
		}
		switch ev.Verb {
		case "create", "update", "patch", "delete":
			return ev.ObjectRef == nil || ev.ObjectRef.Resource != "leases"
		}
		return false
	})
	if err != nil {
		t.Logf("audit log: %v", err)
		return "unknown"
	}
	counts := countBy(evs, func(ev *auditEvent) string {
		return strings.TrimPrefix(ev.User.Username, "system:serviceaccount:kruise-system:") + " " + ev.Verb + " " + ev.Resource()
	})
	if len(counts) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	mins := w.to.Sub(w.from).Minutes()
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f/min", k, float64(counts[k])/mins))
	}
	return strings.Join(parts, "; ")
}

// reportProbes logs the comparison table and the ratios, and fails the test where kruise misses a
// target (p99 flip latency ≤ one period + 200 ms; no writes in steady state).
func reportProbes(t *testing.T, idle probeWindow, runs []*probeRun) {
	t.Helper()
	t.Logf("idle (no probes): kubelet %.2f%% of a core, RSS %s; containerd %.2f%%; shims %.1f%%; node %.2f cores",
		idle.cpu["kubelet"], mib(idle.rss["kubelet"]), idle.cpu["containerd"], idle.shims, idle.node)
	byName := map[string]*probeRun{}
	t.Logf("%-18s %12s %12s %12s %10s %10s %9s %9s %10s %8s %10s",
		"configuration", "CPU (cores)", "RSS", "RSS Δ", "ctl CPU", "containerd", "shims", "node", "p50", "p99", "writes/min")
	for _, r := range runs {
		byName[r.name] = r
		cpu, rss, delta := r.window.cpu[r.main], r.window.rss[r.main], r.window.rss[r.main]-r.before
		if r.main == "kubelet" {
			cpu, delta = r.extraCPU, r.extraRSS
		}
		ctl := 0.0
		for role, v := range r.window.cpu {
			if strings.HasPrefix(role, "controller-") {
				ctl += v
			}
		}
		p50, p99, missed := flipPcts(r.flips)
		t.Logf("%-18s %12.4f %12s %12s %10.4f %10.3f %9.3f %9.2f %10s %8s %10.1f   (%d flips, %d missed; → False %s; → True %s)",
			r.name, cpu/100, mib(rss), mib(delta), ctl/100, r.window.cpu["containerd"]/100, r.window.shims/100, r.window.node,
			msec(p50), msec(p99), r.window.writeRate(), len(r.flips), missed, flipSummary(r.down), flipSummary(r.up))
		t.Logf("  %s writes: %s", r.name, r.window.writeBreakdown())
	}
	k, kl, ok := byName["kruise"], byName["kubelet"], byName["OpenKruise v1.9.0"]
	if k != nil && kl != nil {
		t.Logf("ratio kruise/kubelet: CPU %.2f (daemon %.4f cores / kubelet's extra %.4f), RSS %.2f (daemon's %s / kubelet's Δ %s)",
			k.window.cpu["daemon"]/kl.extraCPU, k.window.cpu["daemon"]/100, kl.extraCPU/100,
			float64(k.window.rss["daemon"])/float64(kl.extraRSS), mib(k.window.rss["daemon"]), mib(kl.extraRSS))
	}
	if k != nil && ok != nil {
		t.Logf("ratio kruise/OpenKruise: daemon CPU %.2f, daemon RSS %.2f, controller CPU %.2f",
			k.window.cpu["daemon"]/ok.window.cpu["daemon"], float64(k.window.rss["daemon"])/float64(ok.window.rss["daemon"]),
			sumCtl(k)/sumCtl(ok))
	}
	if k != nil {
		if _, p99, missed := flipPcts(k.flips); p99 > probesTarget || missed > 0 {
			t.Errorf("kruise: flip → condition p99 %s (%d not followed), target %s", msec(p99), missed, msec(probesTarget))
		}
		if n := k.window.writeRate(); n > 0 {
			t.Errorf("kruise: %.1f writes/min in steady state (%s), target 0", n, k.window.writeBreakdown())
		}
	}
}

func sumCtl(r *probeRun) float64 {
	s := 0.0
	for role, v := range r.window.cpu {
		if strings.HasPrefix(role, "controller-") {
			s += v
		}
	}
	return s
}
