//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller"
)

// Settings of the WorkloadSpread scale benchmark, overridable from the environment.
var (
	wsScaleSets  = envInt("BENCH_WS_SCALE_SETS", 500)
	wsScalePods  = envInt("BENCH_WS_SCALE_PODS", 20)
	wsScaleNodes = envInt("BENCH_WS_SCALE_NODES", 99)
	// wsScaleQPS is both controllers' client rate (burst twice it).
	wsScaleQPS     = envInt("BENCH_WS_SCALE_QPS", 100)
	wsScaleIdle    = time.Duration(envInt("BENCH_WS_SCALE_IDLE_SECONDS", 60)) * time.Second
	wsScaleTimeout = time.Duration(envInt("BENCH_WS_SCALE_TIMEOUT_MINUTES", 15)) * time.Minute
	// wsScaleOpenKruise and wsScaleKruise: "0" leaves that controller out (and its namespace).
	wsScaleOpenKruise = envStr("BENCH_WS_SCALE_OPENKRUISE", "1") != "0"
	wsScaleKruise     = envStr("BENCH_WS_SCALE_KRUISE", "1") != "0"
)

const (
	wsScaleImage = "registry.bench.invalid/ws/app:v1"
	// wsScaleNS holds the pods and WorkloadSpreads of both runs in turn.
	wsScaleNS = "bench-ws-scale"
	// okWSController is OpenKruise's WorkloadSpread controller (its workqueue's name).
	okWSController = "workloadspread-controller"
)

// The zones (node label topology.kubernetes.io/zone) and each WorkloadSpread's subsets: the
// reference's documented example, 34 % / 33 % / 33 %.
var (
	wsZones      = []string{"zone-a", "zone-b", "zone-c"}
	wsZonePct    = []int{34, 33, 33}
	wsZonesShape = "34% / 33% / 33%"
)

// TestWSScale measures WorkloadSpread controllers at scale: wsScaleSets ReplicaSets of
// wsScalePods pods (10,000 pods) on wsScaleNodes kwok nodes in three zones, one WorkloadSpread
// per ReplicaSet, on a private control plane (kwok_cluster_test.go). The pods are made as the
// WorkloadSpread webhook admits them (the matched-workloadspread annotation naming their
// subset, its zone as required node affinity), spread 7 / 7 / 6 over the zones; the benchmark
// creates them (no kube-controller-manager), kwok makes them Running and Ready.
//
// kruise-controller runs first as a host process (webhooks off: nothing is admitted here);
// windows: the WorkloadSpreads' creation until every status is correct and the controller
// quiet, then idle (asserted: no reconcile, no API request but Lease renewals). Then it is
// stopped, its WorkloadSpreads deleted and the deletion costs it wrote removed from the pods, and
// OpenKruise v1.9.0's kruise-manager runs the same windows on the same pods, on its own
// WorkloadSpread CRD (ws_openkruise_test.go).
func TestWSScale(t *testing.T) {
	dir := runDir(t, "BENCH_WS_SCALE_DIR", "kruise-ws-scale-")
	total := wsScaleSets * wsScalePods
	t.Logf("shape: %d ReplicaSets x %d pods = %d pods (both controllers in turn) on %d kwok nodes in %d zones, one WorkloadSpread each (%s); QPS %d; idle %s; OpenKruise %t; dir %s",
		wsScaleSets, wsScalePods, total, wsScaleNodes, len(wsZones), wsZonesShape, wsScaleQPS, wsScaleIdle, wsScaleOpenKruise, dir)
	ctx := context.Background()
	var build openKruiseBuild
	if wsScaleOpenKruise {
		var err error
		if build, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}

	c := startKWOKCluster(t, dir, filepath.Join("testdata", "kwok-stages.yaml"))
	c.installCRDFiles(t, filepath.Join("..", "deploy", "base", "crds", "policy.kruise.io_*.yaml"))
	c.createNodesLabelled(t, wsScaleNodes, func(i int) map[string]string {
		return map[string]string{corev1.LabelTopologyZone: wsZones[i%len(wsZones)]}
	})
	for _, ns := range []string{controller.DefaultNamespace, wsScaleNS} {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := createReplicaSetPods(ctx, c, wsScaleNS, wsScaleSets, wsScalePods, wsSetName, wsScaleImage, wsAdmitted); err != nil {
		t.Fatal(err)
	}
	waitPodsReady(ctx, t, c, wsScaleNS, total, wsScaleTimeout)
	t.Logf("%d pods created and Ready in %s", total, time.Since(start).Round(time.Second))

	var rows []string
	var ours, theirs wsRun
	if wsScaleKruise {
		ours = runKruiseWS(ctx, t, c, dir)
		rows = append(rows, ours.rows()...)
	}
	if wsScaleOpenKruise {
		start := time.Now()
		// Its own WorkloadSpread CRD (ws_openkruise_test.go): kruise's is no longer used.
		c.deleteCRD(t, "workloadspreads.apps.kruise.io")
		okProbe := startOpenKruiseOnKWOK(t, c, build, dir, wsScaleQPS, okWSController)
		waitQuiet(ctx, t, okProbe)
		t.Logf("OpenKruise started and quiet in %s", time.Since(start).Round(time.Second))
		dyn, err := dynamic.NewForConfig(c.admin)
		if err != nil {
			t.Fatal(err)
		}
		theirs = runWSWindows(ctx, t, c, okWS{dyn}, okProbe, "OpenKruise v1.9.0", wsScaleNS)
		rows = append(rows, theirs.rows()...)
	}
	if wsScaleKruise && wsScaleOpenKruise {
		t.Logf("idle CPU kruise / OpenKruise: %.2f%% / %.2f%% of a core; RSS %s / %s",
			ours.idle.cpu(), theirs.idle.cpu(), mib(ours.idle.to.proc.rss), mib(theirs.idle.to.proc.rss))
	}
	t.Logf("Summary (markdown):\n| controller | window | duration | CPU (one core) | RSS end / peak | reconciles | API requests (no Lease, no watch) | kube-apiserver CPU |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))
}

// runKruiseWS runs kruise-controller's windows on wsScaleNS, checks its idle window, and, unless
// OpenKruise is left out, stops it and deletes its WorkloadSpreads (OpenKruise must find
// neither).
func runKruiseWS(ctx context.Context, t *testing.T, c *kwokCluster, dir string) wsRun {
	t.Helper()
	probe := startHostController(t, c, dir, wsScaleQPS, "SidecarTerminator=false", "ImagePullJobGate=false")
	waitQuiet(ctx, t, probe)
	ours := runWSWindows(ctx, t, c, kruiseWS{c.kruise}, probe, "kruise", wsScaleNS)
	idle := ours.idle
	if idle.reconcileSum != 0 {
		t.Errorf("kruise idle: %.0f reconciles (%s), want 0", idle.reconcileSum, breakdownF(idle.reconciles))
	}
	if a := sum(idle.to.m.adds) - sum(idle.from.m.adds); a != 0 {
		t.Errorf("kruise idle: %.0f keys added to the queues, want 0", a)
	}
	if len(idle.requests) != 0 {
		t.Errorf("kruise idle: %d API requests besides Lease renewals and watches (%s), want 0", len(idle.requests),
			breakdown(countBy(idle.requests, func(e *auditEvent) string { return e.Verb + " " + e.Resource() })))
	}
	if cpu := idle.cpu(); cpu > 1 {
		t.Logf("NOT MET: kruise idle CPU %.2f%% above 1%% of a core", cpu)
	}

	if wsScaleOpenKruise {
		stopHostController(t, probe)
		if err := c.kruise.AppsV1alpha1().WorkloadSpreads(wsScaleNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := stripDeletionCosts(ctx, c, wsScaleNS); err != nil {
			t.Fatal(err)
		}
		t.Logf("kruise's deletion costs removed from the pods in %s", time.Since(start).Round(time.Second))
	}
	return ours
}

// wsRun is one controller's windows.
type wsRun struct {
	who           string
	created, idle *window
	correct       time.Duration
	costs         int
}

func (r wsRun) rows() []string {
	var out []string
	for _, w := range []*window{r.created, r.idle} {
		out = append(out, fmt.Sprintf("| %s | %s | %.0f s | %.2f%% | %s / %s | %.0f (%s) | %d | %.0f%% |", r.who, w.name, w.seconds(), w.cpu(),
			mib(w.to.proc.rss), mib(w.peakRSS), w.reconcileSum, breakdownF(w.reconciles), len(w.requests),
			cpuPercent(w.from.apiserver, w.to.apiserver)))
	}
	return out
}

// runWSWindows creates the WorkloadSpreads of ns with probe's controller running, waits until
// every status is correct and the controller quiet, then measures an idle window.
func runWSWindows(ctx context.Context, t *testing.T, c *kwokCluster, api wsAPI, probe *leaderProbe, who, ns string) wsRun {
	t.Helper()
	r := wsRun{who: who}
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s0 := mustSnapshot(ctx, t, probe)
	if err := createWSs(ctx, api, ns, wsScaleSets); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	r.correct = waitWSsCorrect(ctx, t, api, ns)
	waitQuiet(ctx, t, probe)
	s1 := mustSnapshot(ctx, t, probe)
	r.created = mustMeasure(t, probe, "WorkloadSpreads created → all correct and quiet", s0, s1, peak.Stop())
	t.Logf("%s: all %d WorkloadSpreads' status correct %s after the first one's create\n%s", who, wsScaleSets,
		r.correct.Round(time.Millisecond), r.created.describe())
	r.idle = measureIdle(ctx, t, probe, "idle", wsScaleIdle)
	t.Logf("%s:\n%s", who, r.idle.describe())
	r.costs = countDeletionCosts(ctx, t, c, ns)
	dumpMetrics(ctx, t, probe, filepath.Join(c.dir, "metrics-"+ns+".txt"))
	t.Logf("%s: %d of %d pods carry %s", who, r.costs, wsScaleSets*wsScalePods, appsv1alpha1.PodDeletionCostAnnotation)
	return r
}

func wsSetName(i int) string { return fmt.Sprintf("rs-%03d", i) }

// wsZoneOf is the zone (subset index) of pod k of a set: round robin, 7 / 7 / 6 of 20.
func wsZoneOf(k int) int { return k % len(wsZones) }

// wsAdmitted makes pod k of set i as the WorkloadSpread webhook admits it into its subset: the
// annotation naming WorkloadSpread and subset, the subset's zone as required node affinity.
func wsAdmitted(i, k int, pod *corev1.Pod) {
	zone := wsZones[wsZoneOf(k)]
	raw, _ := json.Marshal(appsv1alpha1.InjectWorkloadSpread{Name: wsSetName(i), Subset: zone})
	pod.Annotations = map[string]string{appsv1alpha1.MatchedWorkloadSpreadAnnotation: string(raw)}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{wsZoneTerm(zone)}},
	}}
}

func wsZoneTerm(zone string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
}

// createWSs creates one WorkloadSpread per ReplicaSet of ns, one subset per zone.
func createWSs(ctx context.Context, api wsAPI, ns string, sets int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range sets {
		g.Go(func() error {
			ws := &appsv1alpha1.WorkloadSpread{
				ObjectMeta: metav1.ObjectMeta{Name: wsSetName(i), Namespace: ns},
				Spec: appsv1alpha1.WorkloadSpreadSpec{
					TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: wsSetName(i)},
				},
			}
			for z, zone := range wsZones {
				ws.Spec.Subsets = append(ws.Spec.Subsets, appsv1alpha1.WorkloadSpreadSubset{
					Name:                     zone,
					RequiredNodeSelectorTerm: ptr.To(wsZoneTerm(zone)),
					MaxReplicas:              ptr.To(intstr.FromString(fmt.Sprintf("%d%%", wsZonePct[z]))),
				})
			}
			if err := api.create(ctx, ws); err != nil {
				return fmt.Errorf("creating WorkloadSpread %s: %w", ws.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// wsWant is each subset's status as the pods make it: replicas in the subset, and maxReplicas
// (percent of the ReplicaSet's replicas, rounded up) less those.
func wsWant() []appsv1alpha1.WorkloadSpreadSubsetStatus {
	out := make([]appsv1alpha1.WorkloadSpreadSubsetStatus, len(wsZones))
	for z, zone := range wsZones {
		out[z].Name = zone
		out[z].MissingReplicas = int32(math.Ceil(float64(wsZonePct[z]*wsScalePods) / 100))
	}
	for k := range wsScalePods {
		out[wsZoneOf(k)].Replicas++
		out[wsZoneOf(k)].MissingReplicas--
	}
	return out
}

// wsCorrect is whether a WorkloadSpread's status is what its pods make it: current generation,
// each subset's replicas and missingReplicas, no pod creating or deleting.
func wsCorrect(ws *appsv1alpha1.WorkloadSpread, want []appsv1alpha1.WorkloadSpreadSubsetStatus) bool {
	s := ws.Status
	if s.ObservedGeneration != ws.Generation || len(s.SubsetStatuses) != len(want) {
		return false
	}
	for i, w := range want {
		g := s.SubsetStatuses[i]
		if g.Name != w.Name || g.Replicas != w.Replicas || g.MissingReplicas != w.MissingReplicas || len(g.CreatingPods) > 0 || len(g.DeletingPods) > 0 {
			return false
		}
	}
	return true
}

// waitWSsCorrect waits until every WorkloadSpread of ns has its status correct and returns how
// long that took.
func waitWSsCorrect(ctx context.Context, t *testing.T, api wsAPI, ns string) time.Duration {
	t.Helper()
	start := time.Now()
	want := wsWant()
	done := 0
	var example string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wsScaleTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := api.list(ctx, ns)
		if err != nil {
			return false, nil
		}
		done = 0
		for i := range list {
			if wsCorrect(&list[i], want) {
				done++
			} else {
				example = fmt.Sprintf("%s: %+v (generation %d)", list[i].Name, list[i].Status, list[i].Generation)
			}
		}
		return done == wsScaleSets, nil
	})
	if err != nil {
		t.Fatalf("after %s, %d of %d WorkloadSpreads' status correct in %s (want %+v; e.g. %s): %v",
			time.Since(start).Round(time.Second), done, wsScaleSets, ns, want, example, err)
	}
	return time.Since(start)
}

// countDeletionCosts counts the pods of ns that carry a deletion cost.
func countDeletionCosts(ctx context.Context, t *testing.T, c *kwokCluster, ns string) int {
	t.Helper()
	list, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[appsv1alpha1.PodDeletionCostAnnotation]; ok {
			n++
		}
	}
	return n
}

// stripDeletionCosts removes the deletion cost from every pod of ns that has one, so that the
// next controller finds the pods as the first did.
func stripDeletionCosts(ctx context.Context, c *kwokCluster, ns string) error {
	list, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, appsv1alpha1.PodDeletionCostAnnotation))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[appsv1alpha1.PodDeletionCostAnnotation]; !ok {
			continue
		}
		name := list.Items[i].Name
		g.Go(func() error {
			_, err := c.kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	}
	return g.Wait()
}

// stopHostController stops the kruise-controller of probe (SIGTERM) and waits until it is gone.
func stopHostController(t *testing.T, probe *leaderProbe) {
	t.Helper()
	if err := syscall.Kill(probe.pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping kruise-controller (pid %d): %v", probe.pid, err)
	}
	pollStart(t, "kruise-controller to exit", func(context.Context) (bool, error) {
		return syscall.Kill(probe.pid, 0) != nil, nil
	})
}

// dumpMetrics writes the probe's /metrics to path, for what the windows do not show.
func dumpMetrics(ctx context.Context, t *testing.T, probe *leaderProbe, path string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://controller/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := probe.http.Do(req)
	if err != nil {
		t.Logf("metrics not kept: %v", err)
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		t.Logf("metrics not kept: %v", err)
	}
}
