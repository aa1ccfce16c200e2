//go:build bench

package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller"
)

// Settings of the ResourceDistribution scale benchmark, overridable from the environment.
var (
	rdScaleNamespaces = envInt("BENCH_RD_SCALE_NAMESPACES", 1000)
	// rdScaleQPS is both controllers' client rate (burst twice it): one create per namespace
	// makes it a floor under the time to all copies (10 s at 100/s).
	rdScaleQPS     = envInt("BENCH_RD_SCALE_QPS", 100)
	rdScaleIdle    = time.Duration(envInt("BENCH_RD_SCALE_IDLE_SECONDS", 60)) * time.Second
	rdScaleTimeout = time.Duration(envInt("BENCH_RD_SCALE_TIMEOUT_MINUTES", 10)) * time.Minute
	// rdScaleOpenKruise and rdScaleKruise: "0" leaves that controller out.
	rdScaleOpenKruise = envStr("BENCH_RD_SCALE_OPENKRUISE", "1") != "0"
	rdScaleKruise     = envStr("BENCH_RD_SCALE_KRUISE", "1") != "0"
)

const (
	rdScaleName   = "bench-rd"
	rdScaleSecret = "bench-secret"
	// rdTargetLabel marks the target namespaces; the distribution selects them by it.
	rdTargetLabel = "bench.kruise.io/rd-target"
	// okRDController is OpenKruise's ResourceDistribution controller (its workqueue's name).
	okRDController = "resourcedistribution-controller"
)

// OpenKruise v1.9.0 as the module proxy serves it reads ResourceDistributions at v1beta1 (its
// CRD stores v1beta1; the label selector is named namespaceSelector there), kruise at v1alpha1
// as the v1.9.0 release does: each side writes and reads its own version.
var (
	kruiseRDResource = appsv1alpha1.SchemeGroupVersion.WithResource("resourcedistributions")
	okRDResource     = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "resourcedistributions"}
)

// TestRDScale measures ResourceDistribution controllers at scale: one ResourceDistribution of
// one Secret to rdScaleNamespaces namespaces, all selected by a namespace label selector, on a
// private control plane (kwok_cluster_test.go; no nodes are needed). kruise-controller runs
// first as a host process (webhooks off, ResourceDistributionGate on); windows: the
// distribution's create until every copy exists and its status says succeeded = desired = N,
// then an idle window (asserted: no reconcile, no API request but Lease renewals), then one
// change of the source's data until every copy carries it. Then it is stopped, the
// distribution and its copies deleted (no garbage collector runs here), kruise's CRD replaced by
// OpenKruise's, and OpenKruise v1.9.0's kruise-manager (gate on) runs the same windows.
func TestRDScale(t *testing.T) {
	dir := runDir(t, "BENCH_RD_SCALE_DIR", "kruise-rd-scale-")
	t.Logf("shape: one ResourceDistribution of one Secret to %d namespaces (namespaceLabelSelector); controller QPS %d (burst %d); idle %s; kruise %t, OpenKruise %t; dir %s",
		rdScaleNamespaces, rdScaleQPS, 2*rdScaleQPS, rdScaleIdle, rdScaleKruise, rdScaleOpenKruise, dir)
	ctx := context.Background()
	var build openKruiseBuild
	if rdScaleOpenKruise {
		var err error
		if build, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}

	c := startKWOKCluster(t, dir, filepath.Join("testdata", "kwok-stages.yaml"))
	// kruise-controller's budget informers wait for these before any controller starts.
	c.installCRDFiles(t, filepath.Join("..", "deploy", "base", "crds", "policy.kruise.io_*.yaml"))
	dyn, err := dynamic.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := createTargetNamespaces(ctx, c, rdScaleNamespaces); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d target namespaces created in %s", rdScaleNamespaces, time.Since(start).Round(time.Second))

	var runs []*rdRun
	if rdScaleKruise {
		probe := startHostController(t, c, dir, rdScaleQPS, "SidecarTerminator=false", "ImagePullJobGate=false", "ResourceDistributionGate=true")
		waitQuiet(ctx, t, probe)
		r := runRDWindows(ctx, t, c, kruiseRDAPI(dyn), probe, "kruise")
		runs = append(runs, r)
		if r.idle.reconcileSum != 0 {
			t.Errorf("kruise idle: %.0f reconciles (%s), want 0", r.idle.reconcileSum, breakdownF(r.idle.reconciles))
		}
		if len(r.idle.requests) != 0 {
			t.Errorf("kruise idle: %d API requests besides Lease renewals and watches (%s), want 0", len(r.idle.requests), requestBreakdown(r.idle))
		}
		if rdScaleOpenKruise {
			stopHostController(t, probe)
			clearRD(ctx, t, c, kruiseRDAPI(dyn))
		}
	}
	if rdScaleOpenKruise {
		start := time.Now()
		swapOpenKruiseCRDs(t, c, "resourcedistributions", false)
		probe := startOpenKruiseOnKWOKGates(t, c, build, dir, rdScaleQPS, []string{"ResourceDistributionGate=true"}, okRDController,
			"container-launch-priority-controller", "ephemeraljob-controller", "persistentpodstate-controller")
		waitQuiet(ctx, t, probe)
		t.Logf("OpenKruise started and quiet in %s", time.Since(start).Round(time.Second))
		runs = append(runs, runRDWindows(ctx, t, c, okRDAPI(dyn), probe, "OpenKruise v1.9.0"))
	}

	var rows []string
	for _, r := range runs {
		rows = append(rows, r.rows()...)
	}
	t.Logf("Summary (markdown):\n| controller | window | duration | to all copies + status | CPU seconds (%% of a core) | RSS end / peak | reconciles | API requests (no Lease, no watch) | kube-apiserver CPU |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))
	for _, r := range runs {
		t.Logf("%s: API requests by verb and resource: create: %s; idle: %s; source change: %s", r.who,
			requestBreakdown(r.created), requestBreakdown(r.idle), requestBreakdown(r.updated))
	}
	if len(runs) == 2 {
		k, o := runs[0], runs[1]
		t.Logf("ratios kruise / OpenKruise: to all copies %s, to all updated %s, create-window API requests %s, update-window API requests %s, create-window CPU seconds %s, idle CPU %s, idle RSS %s",
			ratio(k.toCopies.Seconds(), o.toCopies.Seconds()), ratio(k.toUpdated.Seconds(), o.toUpdated.Seconds()),
			ratio(float64(len(k.created.requests)), float64(len(o.created.requests))),
			ratio(float64(len(k.updated.requests)), float64(len(o.updated.requests))),
			ratio(cpuSeconds(k.created), cpuSeconds(o.created)), ratio(k.idle.cpu(), o.idle.cpu()),
			ratio(float64(k.idle.to.proc.rss), float64(o.idle.to.proc.rss)))
	}
}

// swapOpenKruiseCRDs puts OpenKruise's CRDs of plural (its controller reads v1beta1, stored) and
// of PersistentPodStates (so that its PersistentPodState controller starts before the windows,
// as in a real install) in place of kruise's (v1alpha1), or, with back, kruise's in place of
// OpenKruise's. Objects of those kinds go with the CRDs.
func swapOpenKruiseCRDs(t *testing.T, c *kwokCluster, plural string, back bool) {
	t.Helper()
	for _, p := range []string{plural, "persistentpodstates"} {
		c.deleteCRD(t, p+".apps.kruise.io")
		if back {
			c.installCRDFiles(t, filepath.Join("..", "deploy", "base", "crds", "apps.kruise.io_"+p+".yaml"))
		}
	}
	// Without back, startOpenKruiseOnKWOK installs OpenKruise's (installMissingCRDs).
}

// ratio is a / b to two places, "n/a" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// createTargetNamespaces creates n namespaces labelled as the distribution's targets.
func createTargetNamespaces(ctx context.Context, c *kwokCluster, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rdNamespace(i), Labels: map[string]string{rdTargetLabel: "true"}}}
			if _, err := c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func rdNamespace(i int) string { return fmt.Sprintf("rd-%04d", i) }

// rdAPI is one side's ResourceDistribution resource and the name its version gives the
// namespace label selector.
type rdAPI struct {
	r                    dynamic.NamespaceableResourceInterface
	apiVersion, selector string
}

func kruiseRDAPI(dyn dynamic.Interface) rdAPI {
	return rdAPI{dyn.Resource(kruiseRDResource), kruiseRDResource.GroupVersion().String(), "namespaceLabelSelector"}
}

func okRDAPI(dyn dynamic.Interface) rdAPI {
	return rdAPI{dyn.Resource(okRDResource), okRDResource.GroupVersion().String(), "namespaceSelector"}
}

// rdObject is the benchmark's distribution at apiVersion: Secret rdScaleSecret with data v =
// value, to every namespace labelled rdTargetLabel (the selector field named selector).
func rdObject(apiVersion, selector, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       "ResourceDistribution",
		"metadata":   map[string]any{"name": rdScaleName},
		"spec": map[string]any{
			"resource": map[string]any{
				"apiVersion": "v1",
				"kind":       "Secret",
				"metadata":   map[string]any{"name": rdScaleSecret},
				"type":       "Opaque",
				"data":       map[string]any{"v": base64.StdEncoding.EncodeToString([]byte(value))},
			},
			"targets": map[string]any{
				selector: map[string]any{"matchLabels": map[string]any{rdTargetLabel: "true"}},
			},
		},
	}}
}

// rdRun is one controller's windows and times.
type rdRun struct {
	who                     string
	created, idle, updated  *window
	toCopies, toUpdated     time.Duration
	statusCreate, statusUpd string
}

func (r *rdRun) rows() []string {
	var out []string
	for _, x := range []struct {
		w *window
		d string
	}{{r.created, fmt.Sprintf("%.1f s", r.toCopies.Seconds())}, {r.idle, ""}, {r.updated, fmt.Sprintf("%.1f s", r.toUpdated.Seconds())}} {
		w := x.w
		out = append(out, fmt.Sprintf("| %s | %s | %.0f s | %s | %.1f s (%.2f%%) | %s / %s | %.0f (%s) | %d | %.0f%% |",
			r.who, w.name, w.seconds(), x.d, cpuSeconds(w), w.cpu(), mib(w.to.proc.rss), mib(w.peakRSS),
			w.reconcileSum, breakdownF(w.reconciles), len(w.requests), cpuPercent(w.from.apiserver, w.to.apiserver)))
	}
	return out
}

// runRDWindows creates the distribution with probe's controller running and measures its three
// windows.
func runRDWindows(ctx context.Context, t *testing.T, c *kwokCluster, api rdAPI, probe *leaderProbe, who string) *rdRun {
	t.Helper()
	r := &rdRun{who: who}
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s0 := mustSnapshot(ctx, t, probe)
	if _, err := api.r.Create(ctx, rdObject(api.apiVersion, api.selector, "v1"), metav1.CreateOptions{}); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	start := time.Now()
	r.statusCreate = waitRDDone(ctx, t, c, api, who, "v1", start)
	r.toCopies = time.Since(start)
	waitQuiet(ctx, t, probe)
	r.created = mustMeasure(t, probe, "create → all copies, quiet", s0, mustSnapshot(ctx, t, probe), peak.Stop())
	t.Logf("%s: all %d copies present and status succeeded %s after the create (%s)\n%s", who, rdScaleNamespaces,
		r.toCopies.Round(time.Millisecond), r.statusCreate, r.created.describe())

	r.idle = measureIdle(ctx, t, probe, "idle", rdScaleIdle)
	t.Logf("%s:\n%s", who, r.idle.describe())

	peak = watchRSS(probe.pid, 500*time.Millisecond)
	s0 = mustSnapshot(ctx, t, probe)
	patch := fmt.Sprintf(`{"spec":{"resource":{"data":{"v":%q}}}}`, base64.StdEncoding.EncodeToString([]byte("v2")))
	if _, err := api.r.Patch(ctx, rdScaleName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	start = time.Now()
	r.statusUpd = waitRDDone(ctx, t, c, api, who, "v2", start)
	r.toUpdated = time.Since(start)
	waitQuiet(ctx, t, probe)
	r.updated = mustMeasure(t, probe, "source changed → all copies updated, quiet", s0, mustSnapshot(ctx, t, probe), peak.Stop())
	t.Logf("%s: all %d copies updated %s after the source's change (%s)\n%s", who, rdScaleNamespaces,
		r.toUpdated.Round(time.Millisecond), r.statusUpd, r.updated.describe())
	dumpMetrics(ctx, t, probe, filepath.Join(c.dir, "metrics-rd-"+strings.Fields(who)[0]+".txt"))
	return r
}

// waitRDDone waits until every target namespace holds a copy with data v = value that names the
// distribution as its source, and the distribution's status (of its current generation) counts
// every namespace succeeded; it returns the status as read.
func waitRDDone(ctx context.Context, t *testing.T, c *kwokCluster, api rdAPI, who, value string, since time.Time) string {
	t.Helper()
	want := rdScaleNamespaces
	copies, status := 0, "not read"
	lastLog := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, rdScaleTimeout, true, func(ctx context.Context) (bool, error) {
		if time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			t.Logf("%s: %s: %d of %d copies at %s; status %s", who, time.Since(since).Round(time.Second), copies, want, value, status)
		}
		if copies < want {
			list, err := c.kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + rdScaleSecret, ResourceVersion: "0"})
			if err != nil {
				return false, nil
			}
			copies = 0
			for i := range list.Items {
				s := &list.Items[i]
				if strings.HasPrefix(s.Namespace, "rd-") && string(s.Data["v"]) == value &&
					s.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation] == rdScaleName {
					copies++
				}
			}
			if copies < want {
				return false, nil
			}
		}
		u, err := api.r.Get(ctx, rdScaleName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		desired, _, _ := unstructured.NestedInt64(u.Object, "status", "desired")
		succeeded, _, _ := unstructured.NestedInt64(u.Object, "status", "succeeded")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		status = fmt.Sprintf("desired %d, succeeded %d, observedGeneration %d of %d", desired, succeeded, observed, u.GetGeneration())
		return desired == int64(want) && succeeded == int64(want) && observed == u.GetGeneration(), nil
	})
	if err != nil {
		t.Fatalf("%s: after %s, %d of %d copies at %s, status %s: %v", who, time.Since(since).Round(time.Second), copies, want, value, status, err)
	}
	return status
}

// clearRD deletes the distribution and its copies (no garbage collector runs here), so the next
// controller starts from the namespaces alone.
func clearRD(ctx context.Context, t *testing.T, c *kwokCluster, api rdAPI) {
	t.Helper()
	start := time.Now()
	if err := api.r.Delete(ctx, rdScaleName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range rdScaleNamespaces {
		g.Go(func() error {
			return c.kube.CoreV1().Secrets(rdNamespace(i)).Delete(gctx, rdScaleSecret, metav1.DeleteOptions{})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("distribution and its %d copies deleted in %s", rdScaleNamespaces, time.Since(start).Round(time.Second))
}
