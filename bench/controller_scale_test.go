//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/test/nodesim"
)

// Settings of the controller scale benchmark, overridable from the environment.
var (
	scaleNodes = envStr("BENCH_SCALE_NODES", "1000,5000")
	scaleJobs  = envInt("BENCH_SCALE_JOBS", 200)
	// Each job pre-pulls its own image onto one pool of this many simulated nodes, at most
	// scaleParallelism of them at a time.
	scalePoolSize    = envInt("BENCH_SCALE_POOL_SIZE", 10)
	scaleParallelism = envInt("BENCH_SCALE_PARALLELISM", 5)
	// The simulated daemons: how long a pull takes, and their status writes per second
	// (all nodes together).
	scalePullTime     = time.Duration(envInt("BENCH_SCALE_PULL_MS", 2000)) * time.Millisecond
	scaleResponderQPS = envInt("BENCH_SCALE_RESPONDER_QPS", 100)
	scaleIdle         = time.Duration(envInt("BENCH_SCALE_IDLE_SECONDS", 60)) * time.Second
	// scaleTimeout bounds each wait (jobs to complete, requests to be withdrawn, ...).
	scaleTimeout = time.Duration(envInt("BENCH_SCALE_TIMEOUT_MINUTES", 20)) * time.Minute
	// scaleNotReadyWait bounds the wait for the node-lifecycle controller to mark every simulated
	// node (about 3.5 nodes/s here); whatever is left goes on during the later windows.
	scaleNotReadyWait = time.Duration(envInt("BENCH_SCALE_NOTREADY_SECONDS", 240)) * time.Second
)

const (
	// poolLabel names a simulated node's pool; the jobs select pools by it.
	poolLabel = "bench.kruise.io/pool"
	// quietFor: the controller counts as settled when no key was added or processed for this
	// long and its queues are empty.
	quietFor     = 10 * time.Second
	pollInterval = 2 * time.Second
	// unreachableTaint is what the node-lifecycle controller puts on nodes whose kubelet never
	// reported.
	unreachableTaint = "node.kubernetes.io/unreachable"
)

// Targets of the issue.
const (
	targetCPUPercent = 5.0
	targetRSS        = 300 << 20
)

// TestControllerScale measures the leader kruise-controller against simulated nodes: N Node and
// NodeImage objects without kubelets (test/nodesim), responders that act for their daemons,
// and scaleJobs ImagePullJobs, each pre-pulling its own image onto one pool of scalePoolSize
// nodes. For each N it reports CPU, RSS, reconciles and API requests while the nodes join and
// go NotReady, while the jobs progress, while their requests are withdrawn, and idle; idle must
// show no reconcile and no request but the leader's Lease renewals (and informers' watch
// restarts).
func TestControllerScale(t *testing.T) {
	var sizes []int
	for _, s := range strings.Split(scaleNodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("BENCH_SCALE_NODES: %q is not a node count", s)
		}
		sizes = append(sizes, n)
	}
	c := scaleConnect(t)
	var rows []string
	for _, n := range sizes {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			rows = append(rows, runScale(t, c, n)...)
		})
	}
	t.Logf("Summary (markdown):\n| nodes | window | duration | CPU (one core) | RSS end / peak | reconciles/s | API requests/s |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))
}

// scaleClients: a fast client for setting up thousands of objects, and one for the responders,
// whose own limiter bounds their rate.
type scaleClients struct {
	kube      kubernetes.Interface
	kruise    versioned.Interface
	responder versioned.Interface
}

func scaleConnect(t *testing.T) scaleClients {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Fatal("KUBECONFIG is not set: run `make bench-scale`")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(qps float32) *rest.Config {
		c := rest.CopyConfig(cfg)
		c.QPS, c.Burst = qps, int(2*qps)
		return c
	}
	var c scaleClients
	if c.kube, err = kubernetes.NewForConfig(mk(300)); err != nil {
		t.Fatal(err)
	}
	if c.kruise, err = versioned.NewForConfig(mk(300)); err != nil {
		t.Fatal(err)
	}
	if c.responder, err = versioned.NewForConfig(mk(1000)); err != nil {
		t.Fatal(err)
	}
	return c
}

// runScale runs the whole benchmark for n nodes and returns its summary rows.
func runScale(t *testing.T, c scaleClients, n int) []string {
	ctx := context.Background()
	checkDaemonSetExcludes(ctx, t, c.kube)
	// Right after `make deploy` the Lease may have no holder yet, or name a pod on its way out.
	var probe *leaderProbe
	err := wait.PollUntilContextTimeout(ctx, pollInterval, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := findLeader(ctx, c.kube)
		if err != nil {
			t.Logf("waiting for a leader: %v", err)
			return false, nil
		}
		if _, err := p.scrape(ctx); err != nil {
			t.Logf("waiting for the leader's metrics: %v", err)
			return false, nil
		}
		probe = p
		return true, nil
	})
	if err != nil {
		t.Fatalf("no leader kruise-controller to measure: %v", err)
	}
	t.Logf("leader %s, pid %d", probe.pod, probe.pid)
	waitQuiet(ctx, t, probe)

	run := "scale-" + utilrand.String(5)
	ns := "bench-" + run
	pools := max(n/scalePoolSize, 1)
	jobs := scaleJobs
	t.Logf("shape: %d simulated nodes in %d pools of ~%d; %d ImagePullJobs, job i pulls its own image onto pool i mod %d with parallelism %d: %d node-pulls; pull time %s, responder QPS %d",
		n, pools, n/pools, jobs, pools, scaleParallelism, jobs*(n/pools), scalePullTime, scaleResponderQPS)

	sim := nodesim.Clients{Kube: c.kube, Kruise: c.kruise}
	respCtx, stopResponder := context.WithCancel(ctx)
	respDone := make(chan struct{})
	close(respDone) // replaced once the responder runs
	t.Cleanup(func() {
		stopResponder()
		<-respDone
		cleanupScale(t, c, ns, run)
	})

	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// 1. Nodes join.
	s0 := mustSnapshot(ctx, t, probe)
	specs := make([]nodesim.NodeSpec, n)
	for i := range specs {
		specs[i] = nodesim.NodeSpec{Name: fmt.Sprintf("%s-%05d", run, i), Labels: map[string]string{poolLabel: poolName(i % pools)}}
	}
	if err := nodesim.CreateNodes(ctx, sim, run, specs, 32); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d Nodes and NodeImages in %s", n, time.Since(s0.at).Round(time.Second))

	resp, err := nodesim.NewResponder(nodesim.ResponderConfig{
		Client: c.responder, Run: run, PullTime: scalePullTime, ReportPulling: true,
		Workers: 8, QPS: float64(scaleResponderQPS), Burst: 2 * scaleResponderQPS,
	})
	if err != nil {
		t.Fatal(err)
	}
	respDone = make(chan struct{})
	go func() {
		defer close(respDone)
		if err := resp.Run(respCtx); err != nil {
			t.Errorf("responder: %v", err)
		}
	}()
	if !resp.WaitForCacheSync(ctx) {
		t.Fatal("responder cache did not sync")
	}
	waitQuiet(ctx, t, probe)
	s1 := mustSnapshot(ctx, t, probe)
	var windows []*window
	windows = append(windows, mustMeasure(t, probe, "nodes join", s0, s1, 0))

	// 2. The node-lifecycle controller marks the kubelet-less nodes: a condition and a taint on
	// every Node. Nothing the controllers read changes, so nothing should happen.
	waitNotReady(ctx, t, c.kube, run, n)
	waitQuiet(ctx, t, probe)
	s2 := mustSnapshot(ctx, t, probe)
	windows = append(windows, mustMeasure(t, probe, "nodes go NotReady", s1, s2, 0))

	// 3. Jobs progress: from the first create until every job has completed.
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s3 := mustSnapshot(ctx, t, probe)
	if err := createJobs(ctx, c.kruise, ns, jobs, pools); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	done := waitJobs(ctx, t, c.kruise, ns, jobs, resp)
	s4 := mustSnapshot(ctx, t, probe)
	windows = append(windows, mustMeasure(t, probe, "progressing", s3, s4, peak.Stop()))
	checkJobs(t, done, n/pools)

	// 4. Wind-down: completed jobs' requests leave the NodeImages, the daemons drop their
	// statuses.
	peak = watchRSS(probe.pid, 500*time.Millisecond)
	waitWithdrawn(ctx, t, c.kruise, run, resp)
	waitQuiet(ctx, t, probe)
	s5 := mustSnapshot(ctx, t, probe)
	windows = append(windows, mustMeasure(t, probe, "withdrawal", s4, s5, peak.Stop()))

	// 5. Idle: nothing changes; a measurement of scaleIdle, not a wait for anything.
	peak = watchRSS(probe.pid, time.Second)
	s6 := mustSnapshot(ctx, t, probe)
	time.Sleep(scaleIdle)
	s7 := mustSnapshot(ctx, t, probe)
	idle := mustMeasure(t, probe, "idle", s6, s7, peak.Stop())
	windows = append(windows, idle)

	if err := probe.stillLeader(ctx, c.kube); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, w := range windows {
		t.Log(w.describe())
		rows = append(rows, fmt.Sprintf("| %d | %s | %.0f s | %.2f%% | %s / %s | %.2f | %.2f |", n, w.name, w.seconds(), w.cpu(),
			mib(w.to.proc.rss), mib(w.peakRSS), w.reconcileSum/w.seconds(), float64(len(w.requests))/w.seconds()))
	}
	t.Logf("responder: %d simulated pulls, %d status writes, %d failed writes", resp.Pulls(), resp.Writes(), resp.WriteErrors())
	t.Logf("controller caches: %d simulated + the real Nodes and their NodeImages, %d ImagePullJobs", n, jobs)

	// The targets. Idle is asserted: it is the one a regression would quietly break.
	if idle.reconcileSum != 0 {
		t.Errorf("idle: %.0f reconciles (%s), want 0", idle.reconcileSum, breakdownF(idle.reconciles))
	}
	if len(idle.requests) != 0 {
		t.Errorf("idle: %d API requests besides Lease renewals and watches (%s), want 0", len(idle.requests),
			breakdown(countBy(idle.requests, func(e *auditEvent) string { return e.Verb + " " + e.Resource() })))
	}
	for _, w := range windows {
		if w.peakRSS > targetRSS {
			t.Logf("NOT MET: %s: peak RSS %s above %s", w.name, mib(w.peakRSS), mib(targetRSS))
		}
	}
	if cpu := idle.cpu(); cpu > targetCPUPercent {
		t.Logf("NOT MET: idle CPU %.2f%% above %.0f%%", cpu, targetCPUPercent)
	}
	return rows
}

// checkDaemonSetExcludes fails the test unless the deployed kruise-daemon DaemonSet keeps off
// simulated nodes (deploy/overlays/local): otherwise every simulated node gets a daemon pod that
// never starts, and the pods' churn is measured with the rest.
func checkDaemonSetExcludes(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ds, err := client.AppsV1().DaemonSets(controller.DefaultNamespace).Get(ctx, "kruise-daemon", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the kruise-daemon DaemonSet: %v", err)
	}
	if a := ds.Spec.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == nodesim.Label && e.Operator == corev1.NodeSelectorOpDoesNotExist {
					return
				}
			}
		}
	}
	t.Fatalf("the deployed kruise-daemon DaemonSet does not keep off nodes labelled %s: run `make deploy`", nodesim.Label)
}

func poolName(i int) string { return fmt.Sprintf("pool-%03d", i) }

func mustSnapshot(ctx context.Context, t *testing.T, p *leaderProbe) snapshot {
	t.Helper()
	s, err := p.snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustMeasure(t *testing.T, p *leaderProbe, name string, from, to snapshot, peak int64) *window {
	t.Helper()
	w, err := p.measure(name, from, to, peak)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// waitQuiet waits until the controller has added and processed no key for quietFor and its
// queues are empty.
func waitQuiet(ctx context.Context, t *testing.T, p *leaderProbe) {
	t.Helper()
	var last float64 = -1
	var since time.Time
	err := wait.PollUntilContextTimeout(ctx, pollInterval, scaleTimeout, true, func(ctx context.Context) (bool, error) {
		m, err := p.scrape(ctx)
		if err != nil {
			return false, err
		}
		now := time.Now()
		activity := sum(m.adds) + sum(m.processed)
		if activity != last || sum(m.depth) > 0 {
			last, since = activity, now
			return false, nil
		}
		return now.Sub(since) >= quietFor, nil
	})
	if err != nil {
		t.Fatalf("waiting for the controller to settle: %v", err)
	}
}

// waitNotReady waits until the node-lifecycle controller has given every simulated node of run
// a Ready condition and the unreachable taint. It only logs when that takes too long: the
// marking is Kubernetes' business, the benchmark only wants it out of the later windows.
func waitNotReady(ctx context.Context, t *testing.T, client kubernetes.Interface, run string, n int) {
	t.Helper()
	start := time.Now()
	marked := 0
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, scaleNotReadyWait, true, func(ctx context.Context) (bool, error) {
		// From the watch cache: cheap for the API server.
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodesim.Label + "=" + run, ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		marked = 0
		for i := range list.Items {
			if hasReadyCondition(&list.Items[i]) && hasTaint(&list.Items[i], unreachableTaint) {
				marked++
			}
		}
		return marked == n, nil
	})
	if err != nil {
		t.Logf("after %s, %d of %d simulated nodes marked NotReady and tainted by the node-lifecycle controller; going on", time.Since(start).Round(time.Second), marked, n)
		return
	}
	t.Logf("node-lifecycle controller marked all %d simulated nodes within %s", n, time.Since(start).Round(time.Second))
}

func hasReadyCondition(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return true
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, tt := range n.Spec.Taints {
		if tt.Key == key {
			return true
		}
	}
	return false
}

// createJobs creates the jobs: job i pulls its own image onto pool i mod pools.
func createJobs(ctx context.Context, client versioned.Interface, ns string, jobs, pools int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range jobs {
		g.Go(func() error {
			job := &appsv1beta1.ImagePullJob{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%03d", i), Namespace: ns},
				Spec: appsv1beta1.ImagePullJobSpec{
					Image: fmt.Sprintf("registry.bench.invalid/scale/app-%03d:v1", i),
					ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
						Selector: &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{
							MatchLabels: map[string]string{poolLabel: poolName(i % pools)},
						}},
						Parallelism:      ptr.To(intstr.FromInt32(int32(scaleParallelism))),
						CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
						ImagePullPolicy:  appsv1beta1.PullIfNotPresent,
					},
				},
			}
			_, err := client.AppsV1beta1().ImagePullJobs(ns).Create(ctx, job, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating ImagePullJob %s: %w", job.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// waitJobs waits until every job has completed and returns them.
func waitJobs(ctx context.Context, t *testing.T, client versioned.Interface, ns string, jobs int, resp *nodesim.Responder) []appsv1beta1.ImagePullJob {
	t.Helper()
	start, lastLog := time.Now(), time.Now()
	var items []appsv1beta1.ImagePullJob
	err := wait.PollUntilContextTimeout(ctx, pollInterval, scaleTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.AppsV1beta1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		items = list.Items
		completed := 0
		for i := range items {
			if items[i].Status.CompletionTime != nil {
				completed++
			}
		}
		if time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			t.Logf("%s: %d/%d jobs completed, %d simulated pulls done", time.Since(start).Round(time.Second), completed, jobs, resp.Pulls())
		}
		return completed == jobs, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d jobs to complete: %v", jobs, err)
	}
	t.Logf("all %d jobs completed in %s", jobs, time.Since(start).Round(time.Second))
	return items
}

// checkJobs asserts every job pulled on every node of its pool.
func checkJobs(t *testing.T, jobs []appsv1beta1.ImagePullJob, poolSize int) {
	t.Helper()
	for i := range jobs {
		s := jobs[i].Status
		if s.Failed != 0 || s.Succeeded != s.Desired || s.Desired < int32(poolSize) {
			t.Errorf("job %s: desired %d, succeeded %d, failed %d; want every node of its pool (%d+) succeeded",
				jobs[i].Name, s.Desired, s.Succeeded, s.Failed, poolSize)
		}
	}
}

// waitWithdrawn waits until no NodeImage of run names an image in its spec or status and the
// responder has no pull left.
func waitWithdrawn(ctx context.Context, t *testing.T, client versioned.Interface, run string, resp *nodesim.Responder) {
	t.Helper()
	start := time.Now()
	left := 0
	err := wait.PollUntilContextTimeout(ctx, pollInterval, scaleTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{LabelSelector: nodesim.Label + "=" + run, ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		left = 0
		for i := range list.Items {
			if len(list.Items[i].Spec.Images) > 0 || len(list.Items[i].Status.ImageStatuses) > 0 {
				left++
			}
		}
		return left == 0 && resp.Pending() == 0, nil
	})
	if err != nil {
		t.Fatalf("waiting for the requests to be withdrawn: %d NodeImages still name images: %v", left, err)
	}
	t.Logf("requests withdrawn and statuses cleared %s after the last job completed", time.Since(start).Round(time.Second))
}

// cleanupScale deletes the jobs (with their namespace) and the simulated nodes. NodeImages go
// first: with their Node still there and NotReady, the controller lets them go without a word,
// where deleting Nodes first would have it delete (or look up) every NodeImage itself.
func cleanupScale(t *testing.T, c scaleClients, ns, run string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	if err := c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", ns, err)
	}
	if err := c.kruise.AppsV1beta1().NodeImages().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: nodesim.Label + "=" + run}); err != nil {
		t.Errorf("deleting the simulated NodeImages: %v", err)
	}
	if err := nodesim.DeleteNodes(ctx, nodesim.Clients{Kube: c.kube, Kruise: c.kruise}, 32); err != nil {
		t.Errorf("deleting the simulated nodes: %v", err)
	}
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s not gone: %v", ns, err)
	}
	t.Logf("cleaned up in %s", time.Since(start).Round(time.Second))
}
