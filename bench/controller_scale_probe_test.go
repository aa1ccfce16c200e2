//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekruise/kruise/pkg/controller"
)

// What the scale benchmark watches: the leader kruise-controller process, found through its
// leader-election Lease, its metrics on the unix socket in its pod, and its requests in the
// API server's audit log.
const (
	// controllerComm is the process name as /proc/<pid>/comm shows it: cut at 15 characters.
	controllerComm = "kruise-controll"
	controllerUser = "system:serviceaccount:" + controller.DefaultNamespace + ":kruise-controller"
	podNameExtra   = "authentication.kubernetes.io/pod-name"
)

// controllerSocket is the health and metrics socket inside the controller's pod (the local
// overlay's --addr), read through /proc/<pid>/root.
var controllerSocket = envStr("BENCH_CONTROLLER_SOCKET", "/run/kruise/controller.sock")

// leaderProbe reads one leader kruise-controller process.
type leaderProbe struct {
	pod  string
	pid  int
	http *http.Client
	// apiserver is the local kube-apiserver's PID, 0 when unknown: its CPU is reported beside.
	apiserver int
	// auditLog is the API server's audit log to read requests from; "" means the local
	// cluster's (auditLog).
	auditLog string
	// user and lease are the process's user in the audit log and its leader-election Lease's
	// name; "" means kruise-controller's (controllerUser, controller.DefaultLeaseName).
	user, lease string
}

// findLeader finds the pod holding the controller's Lease and its process on this node.
func findLeader(ctx context.Context, client kubernetes.Interface) (*leaderProbe, error) {
	lease, err := client.CoordinationV1().Leases(controller.DefaultNamespace).Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the leader-election Lease: %w", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil, fmt.Errorf("lease %s/%s has no holder", lease.Namespace, lease.Name)
	}
	// The identity is <pod name>_<uuid>; pod names have no underscore.
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	pid, err := findPodProcess(controllerComm, pod)
	if err != nil {
		return nil, err
	}
	sock := fmt.Sprintf("/proc/%d/root%s", pid, controllerSocket)
	p := &leaderProbe{pod: pod, pid: pid, http: &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}}
	if b, err := os.ReadFile("/var/tmp/kruise-local/pids/kube-apiserver.pid"); err == nil {
		p.apiserver, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	return p, nil
}

// stillLeader checks that the Lease still names the measured pod: a window measured across a
// change of leader would mix two processes.
func (p *leaderProbe) stillLeader(ctx context.Context, client kubernetes.Interface) error {
	lease, err := client.CoordinationV1().Leases(controller.DefaultNamespace).Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if h := lease.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, p.pod+"_") {
		return fmt.Errorf("leadership moved away from %s during the benchmark", p.pod)
	}
	return nil
}

// queueMetrics are client-go's workqueue metrics of one scrape, by queue name. kruise-controller
// registers no reconcile counter of its own: a key handed to a worker and finished
// (workqueue_work_duration_seconds_count) is one reconcile.
type queueMetrics struct {
	processed map[string]float64
	adds      map[string]float64
	depth     map[string]float64
	// rest is rest_client_requests_total summed over codes and methods: every request of the
	// process, leader election and watches included.
	rest float64
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

var (
	queueLabel      = regexp.MustCompile(`name="([^"]*)"`)
	controllerLabel = regexp.MustCompile(`controller="([^"]*)"`)
)

// scrape reads the controller's /metrics.
func (p *leaderProbe) scrape(ctx context.Context) (queueMetrics, error) {
	m := queueMetrics{processed: map[string]float64{}, adds: map[string]float64{}, depth: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://controller/metrics", nil)
	if err != nil {
		return m, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return m, fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("scraping the controller's metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		series := line[:i]
		name, labels, _ := strings.Cut(series, "{")
		queue := ""
		if g := queueLabel.FindStringSubmatch(labels); g != nil {
			queue = g[1]
		}
		switch name {
		case "workqueue_work_duration_seconds_count":
			m.processed[queue] = v
		case "controller_runtime_reconcile_total":
			// controller-runtime's (OpenKruise's kruise-manager), which registers no workqueue
			// metrics: one reconcile per finished key, summed over its results.
			if g := controllerLabel.FindStringSubmatch(labels); g != nil {
				m.processed[g[1]] += v
			}
		case "workqueue_adds_total":
			m.adds[queue] = v
		case "workqueue_depth":
			m.depth[queue] = v
		case "rest_client_requests_total":
			m.rest += v
		}
	}
	return m, sc.Err()
}

// snapshot is one reading of everything a window is the difference of.
type snapshot struct {
	at        time.Time
	proc      procSample
	self      procSample
	apiserver procSample
	m         queueMetrics
}

func (p *leaderProbe) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{}
	var err error
	if s.m, err = p.scrape(ctx); err != nil {
		return s, err
	}
	if s.proc, err = sampleProcess(p.pid); err != nil {
		return s, fmt.Errorf("reading the controller process %d: %w", p.pid, err)
	}
	s.at = s.proc.at
	s.self, _ = sampleProcess(os.Getpid())
	if p.apiserver > 0 {
		s.apiserver, _ = sampleProcess(p.apiserver)
	}
	return s, nil
}

// rssPeak samples the controller's VmRSS until stopped, for the peak within a window (VmHWM is
// the peak over the process's whole life).
type rssPeak struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func watchRSS(pid int, every time.Duration) *rssPeak {
	r := &rssPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if s, err := sampleProcess(pid); err == nil {
				r.mu.Lock()
				r.peak = max(r.peak, s.rss)
				r.mu.Unlock()
			}
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

func (r *rssPeak) Stop() int64 {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}

// window is what the controller did between two snapshots.
type window struct {
	name     string
	from, to snapshot
	peakRSS  int64
	// requests: the leader's API requests other than its leader-election Lease calls and its
	// informers' watches, which are counted apart.
	requests     []auditEvent
	watches      int
	leaseCalls   int
	reconciles   map[string]float64
	reconcileSum float64
}

func (w *window) seconds() float64 { return w.to.at.Sub(w.from.at).Seconds() }

func (w *window) cpu() float64 { return cpuPercent(w.from.proc, w.to.proc) }

// measure closes a window: reconciles from the metrics, requests from the audit log.
func (p *leaderProbe) measure(name string, from, to snapshot, peak int64) (*window, error) {
	w := &window{name: name, from: from, to: to, peakRSS: max(peak, to.proc.rss), reconciles: map[string]float64{}}
	for q, v := range to.m.processed {
		if d := v - from.m.processed[q]; d > 0 {
			w.reconciles[q] = d
			w.reconcileSum += d
		}
	}
	path := p.auditLog
	if path == "" {
		path = auditLog
	}
	user, lease := p.user, p.lease
	if user == "" {
		user, lease = controllerUser, controller.DefaultLeaseName
	}
	events, err := auditRequestsIn(path, from.at, to.at, func(e *auditEvent) bool {
		if e.User.Username != user {
			return false
		}
		// Both replicas use one service account; the token names the pod.
		pods := e.User.Extra[podNameExtra]
		return len(pods) == 0 || pods[0] == p.pod
	})
	if err != nil {
		return nil, err
	}
	for i := range events {
		e := &events[i]
		switch {
		case e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == lease:
			w.leaseCalls++
		case e.Verb == "watch":
			w.watches++
		default:
			w.requests = append(w.requests, *e)
		}
	}
	return w, nil
}

// breakdown lists counts as "key n" sorted by count, largest first.
func breakdown(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// describe is the window's figures, one block of log lines.
func (w *window) describe() string {
	var b strings.Builder
	secs := w.seconds()
	fmt.Fprintf(&b, "window %q: %.1fs\n", w.name, secs)
	fmt.Fprintf(&b, "  controller CPU %.2f%% of one core, RSS %s at end, peak %s in window, VmHWM %s\n",
		w.cpu(), mib(w.to.proc.rss), mib(w.peakRSS), mib(w.to.proc.hwm))
	fmt.Fprintf(&b, "  reconciles %.0f (%.2f/s): %s\n", w.reconcileSum, w.reconcileSum/secs, breakdownF(w.reconciles))
	fmt.Fprintf(&b, "  API requests (leader, without Lease renewals and watches) %d (%.2f/s): %s\n",
		len(w.requests), float64(len(w.requests))/secs, breakdown(countBy(w.requests, func(e *auditEvent) string { return e.Verb + " " + e.Resource() })))
	fmt.Fprintf(&b, "  leader-election Lease calls %d, watch (re)starts %d, rest_client_requests_total +%.0f\n",
		w.leaseCalls, w.watches, w.to.m.rest-w.from.m.rest)
	fmt.Fprintf(&b, "  benchmark process CPU %.2f%%, kube-apiserver CPU %.2f%%",
		cpuPercent(w.from.self, w.to.self), cpuPercent(w.from.apiserver, w.to.apiserver))
	return b.String()
}

func breakdownF(m map[string]float64) string {
	c := map[string]int{}
	for k, v := range m {
		c[k] = int(v)
	}
	return breakdown(c)
}
