//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller"
)

// Settings of the UnitedDeployment scale benchmark, overridable from the environment.
var (
	udScalePods  = envInt("BENCH_UD_SCALE_PODS", 500)
	udScaleNodes = envInt("BENCH_UD_SCALE_NODES", 30)
	// udScaleQPS is both controllers' client rate (burst twice it): one create per pod makes it
	// a floor under the time to all pods (5 s at 100/s).
	udScaleQPS     = envInt("BENCH_UD_SCALE_QPS", 100)
	udScaleIdle    = time.Duration(envInt("BENCH_UD_SCALE_IDLE_SECONDS", 60)) * time.Second
	udScaleTimeout = time.Duration(envInt("BENCH_UD_SCALE_TIMEOUT_MINUTES", 10)) * time.Minute
	// udScaleOpenKruise and udScaleKruise: "0" leaves that controller out.
	udScaleOpenKruise = envStr("BENCH_UD_SCALE_OPENKRUISE", "1") != "0"
	udScaleKruise     = envStr("BENCH_UD_SCALE_KRUISE", "1") != "0"
	// udScaleFirst is which runs first when both do: "kruise" or "openkruise" (the machine's
	// load and etcd's history differ between the two turns; swapping them shows how much).
	udScaleFirst = envStr("BENCH_UD_SCALE_FIRST", "kruise")
)

const (
	udScaleName  = "app"
	udScaleImage = "registry.bench.invalid/ud/app:v1"
	// okUDController is OpenKruise's UnitedDeployment controller (its workqueue's name).
	okUDController = "uniteddeployment-controller"
)

// OpenKruise v1.9.0 as the module proxy serves it reads UnitedDeployments at v1beta1 (its CRD
// stores v1beta1; the CloneSet template embeds the v1beta1 CloneSet spec), kruise at v1alpha1
// as the v1.9.0 release does (the v1alpha1 CloneSet spec): each side writes its own version.
var (
	kruiseUDResource = appsv1alpha1.SchemeGroupVersion.WithResource("uniteddeployments")
	okUDResource     = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "uniteddeployments"}
)

// TestUDScale measures UnitedDeployment controllers at scale: one UnitedDeployment of
// udScalePods replicas with a CloneSet template over three subsets, one per zone of
// udScaleNodes kwok nodes (topology.kubernetes.io/zone), replicas spread evenly by the
// controller, on a private control plane (kwok_cluster_test.go). kruise-controller runs first as
// a host process (webhooks off: the object is written as its defaulting webhook leaves it);
// windows: the create until every pod is Ready and the status says so, then an idle window
// (asserted: no reconcile, no API request but Lease renewals). Then it is stopped, its
// UnitedDeployment, CloneSets and pods deleted (no garbage collector runs here), kruise's
// UnitedDeployment CRD replaced by OpenKruise's, and OpenKruise v1.9.0's kruise-manager runs the
// same windows in another namespace (or the other way round: BENCH_UD_SCALE_FIRST=openkruise).
func TestUDScale(t *testing.T) {
	dir := runDir(t, "BENCH_UD_SCALE_DIR", "kruise-ud-scale-")
	t.Logf("shape: one UnitedDeployment of %d pods (CloneSet template) over %d subsets, one per zone of %d kwok nodes; controller QPS %d (burst %d); idle %s; kruise %t, OpenKruise %t; dir %s",
		udScalePods, len(wsZones), udScaleNodes, udScaleQPS, 2*udScaleQPS, udScaleIdle, udScaleKruise, udScaleOpenKruise, dir)
	ctx := context.Background()
	var build openKruiseBuild
	if udScaleOpenKruise {
		var err error
		if build, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}

	c := startKWOKCluster(t, dir, filepath.Join("testdata", "kwok-stages.yaml"))
	c.installCRDFiles(t, filepath.Join("..", "deploy", "base", "crds", "policy.kruise.io_*.yaml"))
	c.createNodesLabelled(t, udScaleNodes, func(i int) map[string]string {
		return map[string]string{corev1.LabelTopologyZone: wsZones[i%len(wsZones)]}
	})
	dyn, err := dynamic.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Each side is stopped and its objects deleted when the other runs after it.
	runKruise := func(last bool) *udRun {
		probe := startHostController(t, c, dir, udScaleQPS, "SidecarTerminator=false", "ImagePullJobGate=false")
		waitQuiet(ctx, t, probe)
		obj, err := kruiseUDObject()
		if err != nil {
			t.Fatal(err)
		}
		r := runUDWindows(ctx, t, c, dyn.Resource(kruiseUDResource), obj, probe, "kruise", "bench-ud-kruise")
		if r.idle.reconcileSum != 0 {
			t.Errorf("kruise idle: %.0f reconciles (%s), want 0", r.idle.reconcileSum, breakdownF(r.idle.reconciles))
		}
		if len(r.idle.requests) != 0 {
			t.Errorf("kruise idle: %d API requests besides Lease renewals and watches (%s), want 0", len(r.idle.requests), requestBreakdown(r.idle))
		}
		if !last {
			stopHostController(t, probe)
			clearUD(ctx, t, c, dyn.Resource(kruiseUDResource), "bench-ud-kruise")
		}
		return r
	}
	runOpenKruise := func(last bool) *udRun {
		start := time.Now()
		swapOpenKruiseCRDs(t, c, "uniteddeployments", false)
		probe := startOpenKruiseOnKWOK(t, c, build, dir, udScaleQPS, okUDController, "cloneset-controller",
			"container-launch-priority-controller", "ephemeraljob-controller", "persistentpodstate-controller")
		waitQuiet(ctx, t, probe)
		t.Logf("OpenKruise started and quiet in %s", time.Since(start).Round(time.Second))
		obj, err := okUDObject()
		if err != nil {
			t.Fatal(err)
		}
		r := runUDWindows(ctx, t, c, dyn.Resource(okUDResource), obj, probe, "OpenKruise v1.9.0", "bench-ud-openkruise")
		if !last {
			stopHostController(t, probe)
			clearUD(ctx, t, c, dyn.Resource(okUDResource), "bench-ud-openkruise")
			swapOpenKruiseCRDs(t, c, "uniteddeployments", true)
		}
		return r
	}
	var runs []*udRun // kruise's first when both ran
	switch {
	case udScaleKruise && udScaleOpenKruise && udScaleFirst == "openkruise":
		theirs := runOpenKruise(false)
		runs = []*udRun{runKruise(true), theirs}
	case udScaleKruise && udScaleOpenKruise:
		ours := runKruise(false)
		runs = []*udRun{ours, runOpenKruise(true)}
	case udScaleKruise:
		runs = []*udRun{runKruise(true)}
	case udScaleOpenKruise:
		runs = []*udRun{runOpenKruise(true)}
	}

	var rows []string
	for _, r := range runs {
		rows = append(rows, r.rows()...)
	}
	t.Logf("Summary (markdown):\n| controller | window | duration | to all Ready (status) | CPU seconds (%% of a core) | RSS end / peak | reconciles | API requests (no Lease, no watch) | kube-apiserver CPU |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))
	for _, r := range runs {
		t.Logf("%s: API requests by verb and resource: create: %s; idle: %s", r.who, requestBreakdown(r.created), requestBreakdown(r.idle))
	}
	if len(runs) == 2 {
		k, o := runs[0], runs[1]
		t.Logf("ratios kruise / OpenKruise: to all Ready %s, to status %s, create-window API requests %s, create-window CPU seconds %s, idle CPU %s, idle RSS %s",
			ratio(k.toReady.Seconds(), o.toReady.Seconds()), ratio(k.toStatus.Seconds(), o.toStatus.Seconds()),
			ratio(float64(len(k.created.requests)), float64(len(o.created.requests))),
			ratio(cpuSeconds(k.created), cpuSeconds(o.created)), ratio(k.idle.cpu(), o.idle.cpu()),
			ratio(float64(k.idle.to.proc.rss), float64(o.idle.to.proc.rss)))
	}
}

// udSelector is the UnitedDeployment's selector and its pods' label.
var udSelector = map[string]string{"app": "bench-ud"}

// udTopology is the three subsets, one per zone, with no replicas of their own: the controller
// spreads spec.replicas evenly.
func udTopology() appsv1alpha1.Topology {
	var top appsv1alpha1.Topology
	for _, zone := range wsZones {
		top.Subsets = append(top.Subsets, appsv1alpha1.Subset{Name: zone, NodeSelectorTerm: wsZoneTerm(zone)})
	}
	return top
}

func udPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: udSelector},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: udScaleImage}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}

// udBase is the UnitedDeployment without its template, with what the reference's defaulting
// webhook sets (revisionHistoryLimit 10, updateStrategy Manual): webhooks are off here.
func udBase() *appsv1alpha1.UnitedDeployment {
	return &appsv1alpha1.UnitedDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseUDResource.GroupVersion().String(), Kind: "UnitedDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: udScaleName},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas:             ptr.To(int32(udScalePods)),
			Selector:             &metav1.LabelSelector{MatchLabels: udSelector},
			Topology:             udTopology(),
			RevisionHistoryLimit: ptr.To(int32(10)),
			UpdateStrategy: appsv1alpha1.UnitedDeploymentUpdateStrategy{
				Type: appsv1alpha1.ManualUpdateStrategyType, ManualUpdate: &appsv1alpha1.ManualUpdate{},
			},
		},
	}
}

// kruiseUDObject is the UnitedDeployment at v1alpha1, its CloneSet template the v1alpha1 spec
// (in place if possible, 20 % unavailable, as the CloneSet defaults).
func kruiseUDObject() (map[string]any, error) {
	ud := udBase()
	mu := intstr.FromString("20%")
	ud.Spec.Template.CloneSetTemplate = &appsv1alpha1.CloneSetTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: udSelector},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector:             &metav1.LabelSelector{MatchLabels: udSelector},
			Template:             udPodTemplate(),
			RevisionHistoryLimit: ptr.To(int32(10)),
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
				Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, MaxUnavailable: &mu,
			},
		},
	}
	return toMap(ud)
}

// okUDObject is the same UnitedDeployment at OpenKruise's v1beta1, its CloneSet template the
// v1beta1 spec.
func okUDObject() (map[string]any, error) {
	ud := udBase()
	obj, err := toMap(ud)
	if err != nil {
		return nil, err
	}
	mu := intstr.FromString("20%")
	spec, err := toMap(appsv1beta1.CloneSetSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: udSelector},
		Template:             udPodTemplate(),
		RevisionHistoryLimit: ptr.To(int32(10)),
		UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
			Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
				PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, MaxUnavailable: &mu,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	obj["apiVersion"] = okUDResource.GroupVersion().String()
	tmpl := map[string]any{"metadata": map[string]any{"labels": toAnyMap(udSelector)}, "spec": spec}
	if err := unstructured.SetNestedField(obj, map[string]any{"cloneSetTemplate": tmpl}, "spec", "template"); err != nil {
		return nil, err
	}
	return obj, nil
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// toMap is v as JSON's generic form, without status.
func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return out, nil
}

// udRun is one controller's windows and times.
type udRun struct {
	who               string
	created, idle     *window
	toReady, toStatus time.Duration
	status            string
}

func (r *udRun) rows() []string {
	w := r.created
	out := []string{fmt.Sprintf("| %s | %s | %.0f s | %.1f s (%.1f s) | %.1f s (%.2f%%) | %s / %s | %.0f (%s) | %d | %.0f%% |",
		r.who, w.name, w.seconds(), r.toReady.Seconds(), r.toStatus.Seconds(), cpuSeconds(w), w.cpu(), mib(w.to.proc.rss), mib(w.peakRSS),
		w.reconcileSum, breakdownF(w.reconciles), len(w.requests), cpuPercent(w.from.apiserver, w.to.apiserver))}
	w = r.idle
	out = append(out, fmt.Sprintf("| %s | %s | %.0f s | | %.1f s (%.2f%%) | %s / %s | %.0f (%s) | %d | %.0f%% |",
		r.who, w.name, w.seconds(), cpuSeconds(w), w.cpu(), mib(w.to.proc.rss), mib(w.peakRSS),
		w.reconcileSum, breakdownF(w.reconciles), len(w.requests), cpuPercent(w.from.apiserver, w.to.apiserver)))
	return out
}

// runUDWindows creates the UnitedDeployment obj in ns with probe's controller running, waits
// until all its pods are Ready and its status says so, then measures an idle window.
func runUDWindows(ctx context.Context, t *testing.T, c *kwokCluster, res dynamic.NamespaceableResourceInterface, obj map[string]any,
	probe *leaderProbe, who, ns string) *udRun {
	t.Helper()
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &udRun{who: who}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s0 := mustSnapshot(ctx, t, probe)
	if _, err := res.Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		peak.Stop()
		t.Fatalf("%s: creating the UnitedDeployment: %v", who, err)
	}
	start := time.Now()
	waitPodsReady(ctx, t, c, ns, udScalePods, udScaleTimeout)
	r.toReady = time.Since(start)
	r.status = waitUDStatus(ctx, t, res, who, ns, start)
	r.toStatus = time.Since(start)
	waitQuiet(ctx, t, probe)
	r.created = mustMeasure(t, probe, "create → all Ready, quiet", s0, mustSnapshot(ctx, t, probe), peak.Stop())
	t.Logf("%s: all %d pods Ready %s after the create, status %s (%s)\n%s", who, udScalePods,
		r.toReady.Round(time.Millisecond), r.toStatus.Round(time.Millisecond), r.status, r.created.describe())
	t.Logf("%s: pods per zone: %s", who, podsPerZone(ctx, t, c, ns))

	r.idle = measureIdle(ctx, t, probe, "idle", udScaleIdle)
	t.Logf("%s:\n%s", who, r.idle.describe())
	dumpMetrics(ctx, t, probe, filepath.Join(c.dir, "metrics-"+ns+".txt"))
	return r
}

// waitUDStatus waits until the UnitedDeployment's status (of its current generation) counts
// every pod ready and returns it as read.
func waitUDStatus(ctx context.Context, t *testing.T, res dynamic.NamespaceableResourceInterface, who, ns string, since time.Time) string {
	t.Helper()
	status := "not read"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, udScaleTimeout, true, func(ctx context.Context) (bool, error) {
		u, err := res.Namespace(ns).Get(ctx, udScaleName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		replicas, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		status = fmt.Sprintf("replicas %d, ready %d, updated %d, observedGeneration %d of %d", replicas, ready, updated, observed, u.GetGeneration())
		n := int64(udScalePods)
		return replicas == n && ready == n && updated == n && observed == u.GetGeneration(), nil
	})
	if err != nil {
		t.Fatalf("%s: after %s, UnitedDeployment status %s: %v", who, time.Since(since).Round(time.Second), status, err)
	}
	return status
}

// podsPerZone counts ns's pods by their node's zone.
func podsPerZone(ctx context.Context, t *testing.T, c *kwokCluster, ns string) string {
	t.Helper()
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for i := range nodes.Items {
		zoneOf[nodes.Items[i].Name] = nodes.Items[i].Labels[corev1.LabelTopologyZone]
	}
	pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range pods.Items {
		counts[zoneOf[pods.Items[i].Spec.NodeName]]++
	}
	return breakdown(counts)
}

// clearUD deletes the UnitedDeployment of ns, its CloneSets and their pods (no garbage collector
// runs here) and waits until the pods are gone, so the next controller's caches hold only its own.
func clearUD(ctx context.Context, t *testing.T, c *kwokCluster, res dynamic.NamespaceableResourceInterface, ns string) {
	t.Helper()
	start := time.Now()
	if err := res.Namespace(ns).Delete(ctx, udScaleName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.kruise.AppsV1beta1().CloneSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	left := 0
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, udScaleTimeout, true, func(ctx context.Context) (bool, error) {
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
	t.Logf("UnitedDeployment, CloneSets and pods of %s deleted in %s", ns, time.Since(start).Round(time.Second))
}
