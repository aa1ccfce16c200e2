//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/test/nodesim"
)

// Settings of the API-load benchmark, overridable from the environment.
var (
	apiloadDaemons  = envInt("BENCH_DAEMONS", 100)
	apiloadBatch    = envInt("BENCH_DAEMON_BATCH", 10)
	apiloadBaseline = envDurationOr("BENCH_BASELINE", 2*time.Minute)
	apiloadSteady   = envDurationOr("BENCH_STEADY", 3*time.Minute)
	// daemonBinary is built by `make build`; the test runs from ./bench.
	daemonBinary     = envStr("BENCH_DAEMON_BIN", "../_output/bin/kruise-daemon")
	apiserverPIDFile = envStr("BENCH_APISERVER_PID", "/var/tmp/kruise-local/pids/kube-apiserver.pid")
)

const (
	// daemonStartupGrace: a daemon's requests up to this long after its /readyz first answers 200 still
	// count as its start-up (the first heartbeat and NodeImage status write race Ready).
	daemonStartupGrace = 5 * time.Second
	// apiloadSettle separates the last daemon's start-up from the steady window.
	apiloadSettle = 20 * time.Second
	// apiloadNodeSettle separates the nodes' creation from the baseline window: longer than the
	// node lifecycle controller's grace period (50 s by default).
	apiloadNodeSettle  = 75 * time.Second
	daemonReadyTimeout = 2 * time.Minute
	// reflectorMinWatch is client-go's minimum watch timeout: a reflector re-opens its watch after
	// a random 5 to 10 minutes, resuming from its resource version (no LIST).
	reflectorMinWatch = 5 * time.Minute
)

// daemonWatches are the resources every daemon lists once and then watches, scoped to its node
// except the pull-secret copies (one namespace), in auditEvent.Resource form.
var daemonWatches = []string{
	"/nodes", "/pods", "/secrets",
	"apps.kruise.io/containerrecreaterequests", "apps.kruise.io/nodeimages",
}

// TestDaemonAPILoad runs BENCH_DAEMONS real kruise-daemon processes on this host, each acting for
// a simulated node, and measures what they cost the API server: their requests at start-up and in
// a steady window (audit log), the API server's CPU, memory and open watches with and without
// them, and the daemons' own memory.
func TestDaemonAPILoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	n, batch := apiloadDaemons, min(apiloadBatch, apiloadDaemons)

	// A private copy: other work in the tree may rebuild _output/bin while the daemons run.
	dir := t.TempDir()
	bin, sum, err := copyBinary(daemonBinary, dir)
	if err != nil {
		t.Fatalf("copying the daemon binary (build it with `make build`): %v", err)
	}
	version, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		t.Fatalf("running %s --version: %v", bin, err)
	}
	e := connect(ctx, t, "apiload", "bench-apiload")
	base, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	apiPID := readAPIServerPID(t, apiserverPIDFile)
	t.Logf("%s (sha256 %.12s); %d daemons in batches of %d; baseline %s, steady window %s; API server pid %d",
		strings.TrimSpace(string(version)), sum, n, batch, apiloadBaseline, apiloadSteady, apiPID)

	// The simulated nodes, their tokens and kubeconfigs.
	names := make([]string, n)
	specs := make([]nodesim.NodeSpec, n)
	for i := range names {
		names[i] = fmt.Sprintf("sim-%d", i)
		specs[i] = nodesim.NodeSpec{Name: names[i]}
	}
	refuseTakenNodes(ctx, t, e, names)
	run := "apiload-" + utilrand.String(5)
	clients := nodesim.Clients{Kube: e.client, Kruise: e.kruise}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer ccancel()
		if err := deleteSimRun(cctx, clients, run, names); err != nil {
			t.Errorf("deleting the simulated nodes of run %s: %v", run, err)
		}
	})
	if err := nodesim.CreateNodes(ctx, clients, run, specs, 20); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(10)
	for _, name := range names {
		g.Go(func() error {
			node, err := e.client.CoreV1().Nodes().Get(gctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return writeDaemonKubeconfig(gctx, e.client, base, node, filepath.Join(dir, name+".kubeconfig"))
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	// Baseline: the nodes exist, no daemon acts for them. The node lifecycle controller first
	// marks each new node (no kubelet posts its status) NotReady and taints it, after its grace
	// period: that burst is not the baseline.
	if err := runWindow(ctx, apiloadNodeSettle); err != nil {
		t.Fatal(err)
	}
	baseline, err := measureAPIServer(ctx, e.client, apiPID, apiloadBaseline)
	if err != nil {
		t.Fatal(err)
	}

	// Start-up, in batches; each batch must be Ready before the next starts.
	var (
		mu      sync.Mutex
		daemons []*simDaemon
	)
	// Registered after TempDir and the node deletion, so it runs before both.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		var wg sync.WaitGroup
		for _, d := range daemons {
			wg.Go(func() {
				if err := d.stop(); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	})
	startA, err := sampleProcess(apiPID)
	if err != nil {
		t.Fatal(err)
	}
	var batchTimes []time.Duration
	for first := 0; first < n; first += batch {
		began := time.Now()
		var group []*simDaemon
		for _, name := range names[first:min(first+batch, n)] {
			d, err := startSimDaemon(bin, dir, name, filepath.Join(dir, name+".kubeconfig"), criEndpoint)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			daemons = append(daemons, d)
			mu.Unlock()
			group = append(group, d)
		}
		g, gctx := errgroup.WithContext(ctx)
		for _, d := range group {
			g.Go(func() error { return d.waitReady(gctx, daemonReadyTimeout) })
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("batch starting at %s: %v", names[first], err)
		}
		batchTimes = append(batchTimes, time.Since(began))
	}
	startB, err := sampleProcess(apiPID)
	if err != nil {
		t.Fatal(err)
	}

	// Steady state.
	if err := runWindow(ctx, apiloadSettle); err != nil {
		t.Fatal(err)
	}
	daemonsA := sampleDaemons(t, daemons)
	steady, err := measureAPIServer(ctx, e.client, apiPID, apiloadSteady)
	if err != nil {
		t.Fatal(err)
	}
	daemonsB := sampleDaemons(t, daemons)
	anon := make([]int64, len(daemons))
	for i, d := range daemons {
		if anon[i], err = anonRSS(d.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range daemons {
		if d.exited() {
			t.Fatalf("daemon of %s exited during the steady window: %v; log tail:\n%s", d.node, d.exitErr, d.logTail(2048))
		}
		if err := d.readyz(ctx); err != nil {
			t.Errorf("daemon of %s not ready at the end of the steady window: %v", d.node, err)
		}
	}

	// What the daemons asked for, from the audit log.
	sim := map[string]bool{}
	for _, name := range names {
		sim[name] = true
	}
	events, err := auditRequests(daemons[0].started, time.Now(), func(ev *auditEvent) bool {
		return ev.User.Username == simDaemonUser && sim[ev.NodeName()]
	})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string][]auditEvent{}
	for _, ev := range events {
		perNode[ev.NodeName()] = append(perNode[ev.NodeName()], ev)
	}

	reportStartup(t, daemons, perNode, batchTimes, cpuPercent(startA, startB))
	checkRefusals(t, events)
	checkOpenWatches(t, daemons, perNode)
	checkSteady(t, daemons, perNode, steady)
	reportAPIServer(t, n, baseline, steady)
	reportDaemons(t, daemonsA, daemonsB, anon)
}

// refuseTakenNodes fails when a node of one of names exists already: its daemon would not be ours
// to measure, and the cleanup would delete another run's node.
func refuseTakenNodes(ctx context.Context, t *testing.T, e *env, names []string) {
	t.Helper()
	nodes, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for i := range nodes.Items {
		if want[nodes.Items[i].Name] {
			t.Fatalf("node %s exists already (labels %v): delete it or lower BENCH_DAEMONS", nodes.Items[i].Name, nodes.Items[i].Labels)
		}
	}
}

func sampleDaemons(t *testing.T, daemons []*simDaemon) []procSample {
	t.Helper()
	out := make([]procSample, len(daemons))
	for i, d := range daemons {
		s, err := sampleProcess(d.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("sampling the daemon of %s: %v", d.node, err)
		}
		out[i] = s
	}
	return out
}

func auditKind(ev *auditEvent) string { return ev.Verb + " " + ev.Resource() }

// reportStartup logs how long the daemons took to become Ready and what each asked for until then.
func reportStartup(t *testing.T, daemons []*simDaemon, perNode map[string][]auditEvent, batches []time.Duration, apiCPU float64) {
	ready := make([]time.Duration, len(daemons))
	var all []map[string]int
	var startupEvents []time.Time
	for i, d := range daemons {
		ready[i] = d.ready.Sub(d.started)
		counts := map[string]int{}
		for _, ev := range perNode[d.node] {
			if ev.RequestReceived.Before(d.started) || !ev.RequestReceived.Before(d.ready.Add(daemonStartupGrace)) {
				continue
			}
			counts[auditKind(&ev)]++
			startupEvents = append(startupEvents, ev.RequestReceived)
		}
		all = append(all, counts)
	}
	keys := tallyKinds(all)
	sort.Slice(ready, func(i, j int) bool { return ready[i] < ready[j] })
	wall := daemons[len(daemons)-1].ready.Sub(daemons[0].started)
	t.Logf("start-up: %d daemons Ready in %s (batches: %v); time to Ready p50 %s p90 %s max %s; API server CPU %.1f%% of a core",
		len(daemons), wall.Round(time.Millisecond), roundDurations(batches), percentile(ready, 0.5).Round(time.Millisecond),
		percentile(ready, 0.9).Round(time.Millisecond), ready[len(ready)-1].Round(time.Millisecond), apiCPU)
	perSecond := map[int64]int{}
	for _, at := range startupEvents {
		perSecond[at.Unix()]++
	}
	peak := 0
	for _, c := range perSecond {
		peak = max(peak, c)
	}
	t.Logf("start-up requests: %d in all (%.1f per daemon), %.1f/s over the start-up, peak %d/s",
		len(startupEvents), float64(len(startupEvents))/float64(len(daemons)), float64(len(startupEvents))/wall.Seconds(), peak)
	t.Logf("| start-up request (per daemon, exec → Ready + %s) | min | median | max |", daemonStartupGrace)
	t.Logf("| --- | --- | --- | --- |")
	for _, k := range sortedKinds(keys) {
		s := spreadOf(keys[k])
		t.Logf("| %s | %d | %d | %d |", k, s.min, s.median, s.max)
	}
}

// checkRefusals fails on any request the API server refused for want of authentication, permission
// or admission: the simulated daemons must be let in exactly like the real one.
func checkRefusals(t *testing.T, events []auditEvent) {
	codes := map[string]int{}
	for i := range events {
		ev := &events[i]
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code < 300 {
			continue
		}
		key := fmt.Sprintf("%d %s", ev.ResponseStatus.Code, auditKind(ev))
		codes[key]++
		if c := ev.ResponseStatus.Code; c == 401 || c == 403 || c == 422 {
			t.Errorf("the API server refused a simulated daemon (%s): %s %s", ev.NodeName(), key, ev.RequestURI)
		}
	}
	for _, k := range sortedKinds(codes) {
		t.Logf("non-2xx answers: %s × %d", k, codes[k])
	}
}

// checkOpenWatches asserts that every daemon holds exactly one watch per resource of
// daemonWatches: a watch whose last audit stage is ResponseStarted is still open.
func checkOpenWatches(t *testing.T, daemons []*simDaemon, perNode map[string][]auditEvent) {
	for _, d := range daemons {
		open := map[string]int{}
		for _, ev := range perNode[d.node] {
			if ev.Verb == "watch" && ev.Stage == "ResponseStarted" {
				open[ev.Resource()]++
			}
		}
		for _, r := range daemonWatches {
			if open[r] != 1 {
				t.Errorf("daemon of %s holds %d watches of %s, want 1 (open: %v)", d.node, open[r], r, open)
			}
		}
		if len(open) != len(daemonWatches) {
			t.Errorf("daemon of %s watches %v, want exactly %v", d.node, sortedKinds(open), daemonWatches)
		}
	}
	t.Logf("open watches: %d per daemon (%s), %d in all", len(daemonWatches), strings.Join(daemonWatches, ", "),
		len(daemonWatches)*len(daemons))
}

// checkSteady reports the daemons' requests in the steady window and asserts their bounds.
//
// The bound: in a window of W, a daemon renews its heartbeat Lease at most ⌊W/10s⌋+1 times (one
// renewal, then daemonlease.RenewInterval after each completes), each a GET and an UPDATE of the
// Lease; each of its five informers re-opens its watch at most ⌈W/5min⌉ times (client-go's
// reflector: a random 5–10 min timeout, then a WATCH from the last resource version). Nothing else
// happens on a node with no CRR and no image to pull. The floor: at least half the renewals a
// punctual heartbeat would make, or the controller would start to see the node's daemon as dead.
func checkSteady(t *testing.T, daemons []*simDaemon, perNode map[string][]auditEvent, w apiWindow) {
	renewals := int(w.to.Sub(w.from)/daemonlease.RenewInterval) + 1
	rewatches := len(daemonWatches) * int((w.to.Sub(w.from)+reflectorMinWatch-1)/reflectorMinWatch)
	bound := 2*renewals + rewatches
	floor := renewals / 2
	minutes := w.to.Sub(w.from).Minutes()

	var all []map[string]int
	totals := make([]int, len(daemons))
	for i, d := range daemons {
		counts := map[string]int{}
		for _, ev := range perNode[d.node] {
			if ev.RequestReceived.Before(w.from) || !ev.RequestReceived.Before(w.to) {
				continue
			}
			counts[auditKind(&ev)]++
			totals[i]++
		}
		all = append(all, counts)
		if totals[i] > bound {
			t.Errorf("daemon of %s made %d requests in the %s steady window, bound %d (%v)", d.node, totals[i],
				w.to.Sub(w.from).Round(time.Second), bound, counts)
		}
		if c := counts["update coordination.k8s.io/leases"]; c < floor {
			t.Errorf("daemon of %s renewed its Lease %d times in %s, want at least %d", d.node, c, w.to.Sub(w.from).Round(time.Second), floor)
		}
		for k, c := range counts {
			if strings.HasPrefix(k, "list ") {
				t.Errorf("daemon of %s listed in the steady window: %s × %d", d.node, k, c)
			}
		}
	}
	keys := tallyKinds(all)
	tot := spreadOf(totals)
	t.Logf("steady window %s: %d requests from %d daemons, %.2f per daemon per minute (max %d in the window, bound %d)",
		w.to.Sub(w.from).Round(time.Second), tot.sum, len(daemons), float64(tot.sum)/float64(len(daemons))/minutes, tot.max, bound)
	t.Logf("| steady request | all daemons, per second | per daemon, per minute | max per daemon in window |")
	t.Logf("| --- | --- | --- | --- |")
	for _, k := range sortedKinds(keys) {
		s := spreadOf(keys[k])
		t.Logf("| %s | %.2f | %.2f | %d |", k, float64(s.sum)/w.seconds(), float64(s.sum)/float64(len(daemons))/minutes, s.max)
	}
}

// reportAPIServer logs the API server's figures with no daemon and with n.
func reportAPIServer(t *testing.T, n int, base, steady apiWindow) {
	all := func(string) bool { return true }
	ours := func(r string) bool {
		for _, w := range daemonWatches {
			if w == r {
				return true
			}
		}
		return false
	}
	sum := func(m map[string]float64, keep func(string) bool) float64 {
		var s float64
		for k, v := range m {
			if keep(k) {
				s += v
			}
		}
		return s
	}
	watches := func(m apiMetrics) map[string]float64 { return m.watchEvents }
	requests := func(m apiMetrics) map[string]float64 { return m.requests }
	noWatch := func(verb string) bool { return verb != "WATCH" }
	t.Logf("| API server | 0 daemons | %d daemons |", n)
	t.Logf("| --- | --- | --- |")
	t.Logf("| CPU, %% of one core | %.1f | %.1f |", base.cpu, steady.cpu)
	t.Logf("| RSS (peak) | %s (%s) | %s (%s) |", mib(base.rss), mib(base.hwm), mib(steady.rss), mib(steady.hwm))
	t.Logf("| open WATCH requests, all | %.0f | %.0f |", sum(base.after.watches, all), sum(steady.after.watches, all))
	t.Logf("| open WATCH requests on %s | %.0f | %.0f |", strings.Join(daemonWatches, ", "),
		sum(base.after.watches, ours), sum(steady.after.watches, ours))
	t.Logf("| requests/s, all users, non-WATCH | %.2f | %.2f |", base.rate(requests, noWatch), steady.rate(requests, noWatch))
	t.Logf("| watch events sent/s, all resources | %.2f | %.2f |", base.rate(watches, all), steady.rate(watches, all))
	for _, r := range append([]string{"coordination.k8s.io/leases"}, daemonWatches...) {
		one := func(k string) bool { return k == r }
		t.Logf("| watch events sent/s, %s | %.2f | %.2f |", r, base.rate(watches, one), steady.rate(watches, one))
	}
	for _, r := range daemonWatches {
		t.Logf("open watches on %s: %.0f → %.0f", r, base.after.watches[r], steady.after.watches[r])
	}
}

// reportDaemons logs the daemons' memory and CPU over the steady window.
func reportDaemons(t *testing.T, a, b []procSample, anon []int64) {
	rss := make([]int64, len(b))
	var cpu float64
	for i := range b {
		rss[i] = b[i].rss
		cpu += cpuPercent(a[i], b[i])
	}
	r, an := spreadOfBytes(rss), spreadOfBytes(anon)
	t.Logf("daemons: VmRSS sum %s, median %s, max %s; RssAnon sum %s, median %s, max %s; CPU %.2f%% of a core in all, %.3f%% each",
		mib(r.sum), mib(r.median), mib(r.max), mib(an.sum), mib(an.median), mib(an.max), cpu, cpu/float64(len(b)))
}

type byteStats struct{ median, max, sum int64 }

func spreadOfBytes(v []int64) byteStats {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	out := byteStats{median: s[len(s)/2], max: s[len(s)-1]}
	for _, b := range s {
		out.sum += b
	}
	return out
}

func roundDurations(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

// tallyKinds turns one request count per kind and daemon into, per kind, one count per daemon (0 for
// the daemons that made no request of that kind).
func tallyKinds(perDaemon []map[string]int) map[string][]int {
	out := map[string][]int{}
	for _, counts := range perDaemon {
		for k := range counts {
			out[k] = nil
		}
	}
	for k := range out {
		for _, counts := range perDaemon {
			out[k] = append(out[k], counts[k])
		}
	}
	return out
}
