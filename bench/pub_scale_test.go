//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller"
)

// Settings of the PodUnavailableBudget scale benchmark, overridable from the environment.
var (
	pubScaleSets  = envInt("BENCH_PUB_SCALE_SETS", 100)
	pubScalePods  = envInt("BENCH_PUB_SCALE_PODS", 100)
	pubScaleNodes = envInt("BENCH_PUB_SCALE_NODES", 100)
	// pubScaleMaxUnavailable is each budget's maxUnavailable.
	pubScaleMaxUnavailable = envInt("BENCH_PUB_SCALE_MAX_UNAVAILABLE", 10)
	// pubScaleQPS is the controller's --kube-api-qps (burst twice it); kruise-controller's default
	// is 20. The controller annotates every covered pod (kruise.io/related-pub), one patch each,
	// so the rate bounds how soon the later budgets' status is written.
	pubScaleQPS     = envInt("BENCH_PUB_SCALE_QPS", 100)
	pubScaleIdle    = time.Duration(envInt("BENCH_PUB_SCALE_IDLE_SECONDS", 60)) * time.Second
	pubScaleTimeout = time.Duration(envInt("BENCH_PUB_SCALE_TIMEOUT_MINUTES", 15)) * time.Minute
)

const (
	pubScaleNamespace = "bench-pub-scale"
	pubScaleImage     = "registry.bench.invalid/pub/app:v1"
	// pubQueue is the budget controller's workqueue name (its workqueue_* metrics' name label).
	pubQueue = "podunavailablebudget"
)

// TestPUBScale measures kruise-controller's PodUnavailableBudget controller at scale: pubScaleSets
// ReplicaSets of pubScalePods pods each (10,000 pods) on pubScaleNodes kwok nodes (no
// kube-controller-manager: the benchmark creates the pods itself, owned by their ReplicaSet, and
// kwok makes them Running and Ready), one budget per ReplicaSet selecting its pods, against a
// private control plane (kwok_cluster_test.go) with the controller as a host process (webhooks
// off, no daemon, the gated controllers that are not the budget's off). Windows: the budgets'
// creation until every status is correct and the controller quiet; then idle, which must show no
// reconcile and no API request but Lease renewals.
func TestPUBScale(t *testing.T) {
	dir := runDir(t, "BENCH_PUB_SCALE_DIR", "kruise-pub-scale-")
	total := pubScaleSets * pubScalePods
	t.Logf("shape: %d ReplicaSets x %d pods = %d pods on %d kwok nodes, one budget each (maxUnavailable %d); controller QPS %d; idle %s; dir %s",
		pubScaleSets, pubScalePods, total, pubScaleNodes, pubScaleMaxUnavailable, pubScaleQPS, pubScaleIdle, dir)
	ctx := context.Background()

	c := startKWOKCluster(t, dir, filepath.Join("testdata", "kwok-stages.yaml"))
	c.installCRDFiles(t, filepath.Join("..", "deploy", "base", "crds", "policy.kruise.io_*.yaml"))
	c.createNodes(t, pubScaleNodes)
	for _, ns := range []string{controller.DefaultNamespace, pubScaleNamespace} {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := createReplicaSetPods(ctx, c, pubScaleNamespace, pubScaleSets, pubScalePods, pubSetName, pubScaleImage, nil); err != nil {
		t.Fatal(err)
	}
	waitPodsReady(ctx, t, c, pubScaleNamespace, total, pubScaleTimeout)
	t.Logf("%d pods created and Ready in %s", total, time.Since(start).Round(time.Second))

	probe := startHostController(t, c, dir, pubScaleQPS, "SidecarTerminator=false", "ImagePullJobGate=false")
	waitQuiet(ctx, t, probe)

	var windows []*window
	// 1. The budgets are created; until every status is correct and the controller quiet.
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s0 := mustSnapshot(ctx, t, probe)
	if err := createPUBs(ctx, c, pubScaleSets); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	correct := waitPUBsCorrect(ctx, t, c, pubScaleSets, pubScalePods)
	waitQuiet(ctx, t, probe)
	s1 := mustSnapshot(ctx, t, probe)
	windows = append(windows, mustMeasure(t, probe, "budgets created", s0, s1, peak.Stop()))

	// 2. Idle: nothing changes.
	windows = append(windows, measureIdle(ctx, t, probe, "idle", pubScaleIdle))

	var rows []string
	for _, w := range windows {
		t.Log(w.describe())
		rows = append(rows, fmt.Sprintf("| %s | %.0f s | %.2f%% | %s / %s | %.0f (%s %.0f) | %d | %.0f%% |", w.name, w.seconds(), w.cpu(),
			mib(w.to.proc.rss), mib(w.peakRSS), w.reconcileSum, pubQueue, w.reconciles[pubQueue], len(w.requests),
			cpuPercent(w.from.apiserver, w.to.apiserver)))
	}
	t.Logf("all %d budgets' status correct %s after the first budget's create", pubScaleSets, correct.Round(time.Millisecond))
	t.Logf("Summary (markdown):\n| window | duration | controller CPU (one core) | RSS end / peak | reconciles (budget queue) | API requests (no Lease, no watch) | kube-apiserver CPU |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))

	idle := windows[1]
	if idle.reconcileSum != 0 {
		t.Errorf("idle: %.0f reconciles (%s), want 0", idle.reconcileSum, breakdownF(idle.reconciles))
	}
	if a := idle.to.m.adds[pubQueue] - idle.from.m.adds[pubQueue]; a != 0 {
		t.Errorf("idle: %.0f keys added to the %s queue, want 0", a, pubQueue)
	}
	if len(idle.requests) != 0 {
		t.Errorf("idle: %d API requests besides Lease renewals and watches (%s), want 0", len(idle.requests),
			breakdown(countBy(idle.requests, func(e *auditEvent) string { return e.Verb + " " + e.Resource() })))
	}
	if cpu := idle.cpu(); cpu > targetCPUPercent {
		t.Logf("NOT MET: idle CPU %.2f%% above %.0f%% of a core", cpu, targetCPUPercent)
	}
}

// installCRDFiles creates the CRDs of the files pattern matches and waits until each is
// Established.
func (c *kwokCluster) installCRDFiles(t *testing.T, pattern string) {
	t.Helper()
	apiext, err := apiextensionsclient.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs match %s: %v", pattern, err)
	}
	ctx := context.Background()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("installing %s: %v", f, err)
		}
		pollStart(t, crd.Name+" Established", func(ctx context.Context) (bool, error) {
			got, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
}

func pubSetName(i int) string { return fmt.Sprintf("rs-%03d", i) }

// createPUBs creates one budget per ReplicaSet, selecting its pods.
func createPUBs(ctx context.Context, c *kwokCluster, sets int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range sets {
		g.Go(func() error {
			pub := &policyv1alpha1.PodUnavailableBudget{
				ObjectMeta: metav1.ObjectMeta{Name: pubSetName(i), Namespace: pubScaleNamespace},
				Spec: policyv1alpha1.PodUnavailableBudgetSpec{
					Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": pubSetName(i)}},
					MaxUnavailable: ptr.To(intstr.FromInt(pubScaleMaxUnavailable)),
				},
			}
			if _, err := c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubScaleNamespace).Create(ctx, pub, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating budget %s: %w", pub.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// pubCorrect is whether a budget's status is what its ReplicaSet's pods, all Ready and none
// disrupted, make it.
func pubCorrect(p *policyv1alpha1.PodUnavailableBudget, pods int32) bool {
	s := p.Status
	desired := max(0, pods-int32(pubScaleMaxUnavailable))
	return s.ObservedGeneration == p.Generation && s.TotalReplicas == pods && s.CurrentAvailable == pods &&
		s.DesiredAvailable == desired && s.UnavailableAllowed == pods-desired && len(s.DisruptedPods) == 0 && len(s.UnavailablePods) == 0
}

// waitPUBsCorrect waits until every budget's status is correct and returns how long that took.
func waitPUBsCorrect(ctx context.Context, t *testing.T, c *kwokCluster, sets, pods int) time.Duration {
	t.Helper()
	start := time.Now()
	done := 0
	var example string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pubScaleTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubScaleNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done = 0
		for i := range list.Items {
			p := &list.Items[i]
			if pubCorrect(p, int32(pods)) {
				done++
			} else {
				example = fmt.Sprintf("%s: %+v (generation %d)", p.Name, p.Status, p.Generation)
			}
		}
		return done == sets, nil
	})
	if err != nil {
		t.Fatalf("after %s, %d of %d budgets' status correct (e.g. %s): %v", time.Since(start).Round(time.Second), done, sets, example, err)
	}
	return time.Since(start)
}
