//go:build bench

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller"
)

// Settings of the BroadcastJob scale benchmark, overridable from the environment.
var (
	bcjScaleNodes = envInt("BENCH_BCJ_SCALE_NODES", 5000)
	// bcjScaleQPS is both controllers' client rate (burst twice it): at 5,000 pods, one create
	// each, the rate is a floor under the time to all pods created (50 s at 100/s).
	bcjScaleQPS     = envInt("BENCH_BCJ_SCALE_QPS", 100)
	bcjScaleIdle    = time.Duration(envInt("BENCH_BCJ_SCALE_IDLE_SECONDS", 60)) * time.Second
	bcjScaleTimeout = time.Duration(envInt("BENCH_BCJ_SCALE_TIMEOUT_MINUTES", 20)) * time.Minute
	// bcjScaleOpenKruise and bcjScaleKruise: "0" leaves that controller out.
	bcjScaleOpenKruise = envStr("BENCH_BCJ_SCALE_OPENKRUISE", "1") != "0"
	bcjScaleKruise     = envStr("BENCH_BCJ_SCALE_KRUISE", "1") != "0"
	// bcjScaleFirst is which runs first when both do: "kruise" or "openkruise" (the machine's
	// load and etcd's history differ between the two turns; swapping them shows how much).
	bcjScaleFirst = envStr("BENCH_BCJ_SCALE_FIRST", "kruise")
)

const (
	bcjScaleImage = "registry.bench.invalid/bcj/task:v1"
	bcjScaleJob   = "task"
	// bcjCompleteLabel makes kwok end the pod Succeeded a second after it runs (the pod-complete
	// stage of testdata/kwok-stages.yaml).
	bcjCompleteLabel = "bench.kruise.io/kwok-complete"
	// kwokTaintKey is the taint kwok's own clusters put on their nodes (kwokctl's default); the
	// nodes here carry it too, so the job must tolerate it, as a real one on kwok nodes does.
	kwokTaintKey = "kwok.x-k8s.io/node"
)

// TestBCJScale measures BroadcastJob controllers at scale: one BroadcastJob (completionPolicy
// Always, parallelism unset, restartPolicy Never, tolerating kwok's taint) over bcjScaleNodes
// kwok nodes, on a private control plane (kwok_cluster_test.go); kwok runs each pod and ends it
// Succeeded a second later. kruise-controller runs first as a host process (webhooks off), then,
// after it is stopped and its job and pods deleted, OpenKruise v1.9.0's kruise-manager runs the
// same job in another namespace (or the other way round: BENCH_BCJ_SCALE_FIRST=openkruise) (on kruise's BroadcastJob CRD: same wire schema, v1beta1 served
// and stored). For each: the time from the job's create to all its pods created, to all
// Succeeded and to the job Complete, the controller's CPU seconds, peak RSS, reconciles and API
// requests by verb and resource over that window, then an idle window (no reconcile and no
// request but Lease renewals wanted).
func TestBCJScale(t *testing.T) {
	dir := runDir(t, "BENCH_BCJ_SCALE_DIR", "kruise-bcj-scale-")
	t.Logf("shape: one BroadcastJob over %d kwok nodes (tainted %s, tolerated), completionPolicy Always, parallelism unset; controller QPS %d (burst %d); idle %s; kruise %t, OpenKruise %t, first %s; dir %s",
		bcjScaleNodes, kwokTaintKey, bcjScaleQPS, 2*bcjScaleQPS, bcjScaleIdle, bcjScaleKruise, bcjScaleOpenKruise, bcjScaleFirst, dir)
	ctx := context.Background()
	var build openKruiseBuild
	if bcjScaleOpenKruise {
		var err error
		if build, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}

	c := startKWOKCluster(t, dir, filepath.Join("testdata", "kwok-stages.yaml"))
	// kruise-controller's budget informers wait for these before any controller starts.
	c.installCRDFiles(t, filepath.Join("..", "deploy", "base", "crds", "policy.kruise.io_*.yaml"))
	start := time.Now()
	createTaintedNodes(ctx, t, c, bcjScaleNodes)
	t.Logf("%d kwok nodes created and Ready in %s", bcjScaleNodes, time.Since(start).Round(time.Second))
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Each side is stopped and its job and pods deleted when the other runs after it.
	runKruise := func(last bool) *bcjRun {
		probe := startHostController(t, c, dir, bcjScaleQPS, "SidecarTerminator=false", "ImagePullJobGate=false")
		waitQuiet(ctx, t, probe)
		r := runBCJWindows(ctx, t, c, probe, "kruise", "bench-bcj-kruise")
		if r.idle.reconcileSum != 0 {
			t.Errorf("kruise idle: %.0f reconciles (%s), want 0", r.idle.reconcileSum, breakdownF(r.idle.reconciles))
		}
		if len(r.idle.requests) != 0 {
			t.Errorf("kruise idle: %d API requests besides Lease renewals and watches (%s), want 0", len(r.idle.requests), requestBreakdown(r.idle))
		}
		if !last {
			stopHostController(t, probe)
			clearBCJ(ctx, t, c, "bench-bcj-kruise")
		}
		return r
	}
	runOpenKruise := func(last bool) *bcjRun {
		start := time.Now()
		// The last of its controllers to start (each waits on discovery): none may start inside
		// the measured window. Its PersistentPodState controller reads v1beta1, which kruise's
		// CRD does not serve, so it never starts and is not waited for.
		probe := startOpenKruiseOnKWOK(t, c, build, dir, bcjScaleQPS, okBCJController,
			"container-launch-priority-controller", "ephemeraljob-controller")
		waitQuiet(ctx, t, probe)
		t.Logf("OpenKruise started and quiet in %s", time.Since(start).Round(time.Second))
		r := runBCJWindows(ctx, t, c, probe, "OpenKruise v1.9.0", "bench-bcj-openkruise")
		if !last {
			stopHostController(t, probe)
			clearBCJ(ctx, t, c, "bench-bcj-openkruise")
		}
		return r
	}
	var runs []*bcjRun // kruise's first when both ran
	switch {
	case bcjScaleKruise && bcjScaleOpenKruise && bcjScaleFirst == "openkruise":
		theirs := runOpenKruise(false)
		runs = []*bcjRun{runKruise(true), theirs}
	case bcjScaleKruise && bcjScaleOpenKruise:
		ours := runKruise(false)
		runs = []*bcjRun{ours, runOpenKruise(true)}
	case bcjScaleKruise:
		runs = []*bcjRun{runKruise(true)}
	case bcjScaleOpenKruise:
		runs = []*bcjRun{runOpenKruise(true)}
	}

	var rows []string
	for _, r := range runs {
		rows = append(rows, r.rows()...)
	}
	t.Logf("Summary (markdown):\n| controller | window | duration | all pods created | all Succeeded | job Complete (after the last Succeeded) | CPU seconds (%% of a core) | RSS end / peak | reconciles | API requests (no Lease, no watch) | kube-apiserver CPU |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))
	for _, r := range runs {
		t.Logf("%s: API requests by verb and resource, job window: %s; idle: %s", r.who, requestBreakdown(r.run), requestBreakdown(r.idle))
	}
	if len(runs) == 2 {
		k, o := runs[0], runs[1]
		ratio := func(a, b float64) string {
			if b == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		t.Logf("ratios kruise / OpenKruise: all pods created %s, job Complete %s, CPU seconds %s, peak RSS %s, API requests %s",
			ratio(k.created.Seconds(), o.created.Seconds()), ratio(k.complete.Seconds(), o.complete.Seconds()),
			ratio(cpuSeconds(k.run), cpuSeconds(o.run)), ratio(float64(k.run.peakRSS), float64(o.run.peakRSS)),
			ratio(float64(len(k.run.requests)), float64(len(o.run.requests))))
	}
}

// okBCJController is OpenKruise's BroadcastJob controller (its workqueue's name).
const okBCJController = "broadcastjob-controller"

// bcjRun is one controller's windows and times.
type bcjRun struct {
	who                          string
	run, idle                    *window
	created, succeeded, complete time.Duration
	status                       appsv1beta1.BroadcastJobStatus
}

func (r *bcjRun) rows() []string {
	out := []string{fmt.Sprintf("| %s | %s | %.0f s | %.1f s | %.1f s | %.1f s (+%.2f s) | %.1f s (%.0f%%) | %s / %s | %.0f (%s) | %d | %.0f%% |",
		r.who, r.run.name, r.run.seconds(), r.created.Seconds(), r.succeeded.Seconds(), r.complete.Seconds(), (r.complete - r.succeeded).Seconds(),
		cpuSeconds(r.run), r.run.cpu(), mib(r.run.to.proc.rss), mib(r.run.peakRSS), r.run.reconcileSum, breakdownF(r.run.reconciles),
		len(r.run.requests), cpuPercent(r.run.from.apiserver, r.run.to.apiserver))}
	w := r.idle
	out = append(out, fmt.Sprintf("| %s | %s | %.0f s | | | | %.1f s (%.2f%%) | %s / %s | %.0f | %d | %.0f%% |",
		r.who, w.name, w.seconds(), cpuSeconds(w), w.cpu(), mib(w.to.proc.rss), mib(w.peakRSS), w.reconcileSum, len(w.requests),
		cpuPercent(w.from.apiserver, w.to.apiserver)))
	return out
}

func cpuSeconds(w *window) float64 { return (w.to.proc.cpu - w.from.proc.cpu).Seconds() }

func requestBreakdown(w *window) string {
	return breakdown(countBy(w.requests, func(e *auditEvent) string { return e.Verb + " " + e.Resource() }))
}

// runBCJWindows creates the job in ns with probe's controller running, waits until it is
// Complete and the controller quiet, checks its pods and status, then measures an idle window.
func runBCJWindows(ctx context.Context, t *testing.T, c *kwokCluster, probe *leaderProbe, who, ns string) *bcjRun {
	t.Helper()
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obs, err := observeBCJPods(ctx, c, ns, bcjScaleNodes)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.stop()
	r := &bcjRun{who: who}
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s0 := mustSnapshot(ctx, t, probe)
	if _, err := c.kruise.AppsV1beta1().BroadcastJobs(ns).Create(ctx, bcjScaleObject(ns), metav1.CreateOptions{}); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	created := time.Now()
	job := waitBCJComplete(ctx, t, c, ns, obs, created)
	r.complete = time.Since(created)
	r.created, r.succeeded = obs.times(created)
	r.status = job.Status
	waitQuiet(ctx, t, probe)
	s1 := mustSnapshot(ctx, t, probe)
	r.run = mustMeasure(t, probe, "create → Complete, quiet", s0, s1, peak.Stop())
	t.Logf("%s: all %d pods created %s, all Succeeded %s, job Complete %s after the create (status %+v)\n%s",
		who, bcjScaleNodes, r.created.Round(time.Millisecond), r.succeeded.Round(time.Millisecond), r.complete.Round(time.Millisecond),
		job.Status, r.run.describe())
	if msg := obs.check(); msg != "" {
		t.Errorf("%s: %s", who, msg)
	}
	s := job.Status
	if s.Desired != int32(bcjScaleNodes) || s.Succeeded != int32(bcjScaleNodes) || s.Active != 0 || s.Failed != 0 || s.Phase != appsv1beta1.PhaseCompleted {
		t.Errorf("%s: job status desired %d, succeeded %d, active %d, failed %d, phase %q; want %d, %d, 0, 0, completed",
			who, s.Desired, s.Succeeded, s.Active, s.Failed, s.Phase, bcjScaleNodes, bcjScaleNodes)
	}
	r.idle = measureIdle(ctx, t, probe, "idle after Complete", bcjScaleIdle)
	t.Logf("%s:\n%s", who, r.idle.describe())
	dumpMetrics(ctx, t, probe, filepath.Join(c.dir, "metrics-"+ns+".txt"))
	return r
}

// bcjScaleObject is the benchmark's job: a pod per node that kwok runs for a second.
func bcjScaleObject(ns string) *appsv1beta1.BroadcastJob {
	return &appsv1beta1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Name: bcjScaleJob, Namespace: ns},
		Spec: appsv1beta1.BroadcastJobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{bcjCompleteLabel: "true"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "task", Image: bcjScaleImage}},
					Tolerations: []corev1.Toleration{{
						Key: kwokTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
				},
			},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
			FailurePolicy:    appsv1beta1.FailurePolicy{Type: appsv1beta1.FailurePolicyTypeFailFast},
		},
	}
}

// waitBCJComplete polls the job until its Complete condition is True (failing on Failed) and
// logs progress from the pod observer every 30 s.
func waitBCJComplete(ctx context.Context, t *testing.T, c *kwokCluster, ns string, obs *bcjPodObserver, since time.Time) *appsv1beta1.BroadcastJob {
	t.Helper()
	var job *appsv1beta1.BroadcastJob
	lastLog := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, bcjScaleTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := c.kruise.AppsV1beta1().BroadcastJobs(ns).Get(ctx, bcjScaleJob, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		job = got
		if time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			t.Logf("%s: %s; job status %+v", time.Since(since).Round(time.Second), obs.progress(), got.Status)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case appsv1beta1.JobComplete:
				return true, nil
			case appsv1beta1.JobFailed:
				return false, fmt.Errorf("job Failed: %s: %s", cond.Reason, cond.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		status := "not read"
		if job != nil {
			status = fmt.Sprintf("%+v", job.Status)
		}
		t.Fatalf("after %s, BroadcastJob %s/%s not Complete (%s; status %s): %v", time.Since(since).Round(time.Second), ns, bcjScaleJob, obs.progress(), status, err)
	}
	return job
}

// clearBCJ deletes the job of ns and its pods (no garbage collector runs here) and waits until
// the pods are gone, so the next controller's caches hold only its own.
func clearBCJ(ctx context.Context, t *testing.T, c *kwokCluster, ns string) {
	t.Helper()
	start := time.Now()
	if err := c.kruise.AppsV1beta1().BroadcastJobs(ns).Delete(ctx, bcjScaleJob, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	left := 0
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, bcjScaleTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		left = len(list.Items)
		return left == 0, nil
	})
	if err != nil {
		t.Fatalf("%d pods of %s left: %v", left, ns, err)
	}
	t.Logf("job and pods of %s deleted in %s", ns, time.Since(start).Round(time.Second))
}

// createTaintedNodes creates n Nodes for kwok to manage, each with kwok's NoSchedule taint, 32
// at a time, and waits until all are Ready.
func createTaintedNodes(ctx context.Context, t *testing.T, c *kwokCluster, n int) {
	t.Helper()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			name := fmt.Sprintf("kwok-node-%05d", i)
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kwokNodeLabel: "true", corev1.LabelHostname: name}},
				Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokTaintKey, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
			}
			if _, err := c.kube.CoreV1().Nodes().Create(gctx, node, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating node %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, bcjScaleTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwokNodeLabel, ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		ready = 0
		for i := range list.Items {
			for _, cond := range list.Items[i].Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	if err != nil {
		t.Fatalf("%d of %d kwok nodes Ready: %v", ready, n, err)
	}
}
