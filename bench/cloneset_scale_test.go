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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/controller"
)

// Settings of the CloneSet scale benchmark, overridable from the environment.
var (
	csSets  = envInt("BENCH_CLONESET_SCALE_SETS", 500)
	csPods  = envInt("BENCH_CLONESET_SCALE_PODS", 20)
	csNodes = envInt("BENCH_CLONESET_SCALE_NODES", 100)
	csIdle  = time.Duration(envInt("BENCH_CLONESET_SCALE_IDLE_SECONDS", 60)) * time.Second
	// csQPS is the controller's --kube-api-qps (burst twice it). Its default, 20, would make the
	// client's rate limiter the whole story at 10,000 pods (each in-place update is three writes).
	csQPS = envInt("BENCH_CLONESET_SCALE_QPS", 100)
	// csScaleMaxUnavailable: 20% is kruise's (and OpenKruise's) default, so the rollout is what a
	// CloneSet without a tuned strategy does: 4 of 20 pods at a time, in 5 waves.
	csScaleMaxUnavailable = envStr("BENCH_CLONESET_SCALE_MAX_UNAVAILABLE", "20%")
	csTimeout             = time.Duration(envInt("BENCH_CLONESET_SCALE_TIMEOUT_MINUTES", 30)) * time.Minute
	// csControllerBin is the kruise-controller binary run as a host process (`make build`).
	csControllerBin = envStr("KRUISE_CONTROLLER_BIN", "../_output/bin/kruise-controller")
)

const (
	csNamespace = "bench-cloneset"
	csImageV1   = "registry.bench.invalid/cloneset/app:v1"
	csImageV2   = "registry.bench.invalid/cloneset/app:v2"
)

// TestCloneSetScale measures kruise-controller running CloneSets at scale: csSets CloneSets of
// csPods pods on csNodes nodes simulated by kwok (bench/testdata/kwok-stages.yaml), against a
// private control plane (kwok_cluster_test.go) and with the controller as a host process (webhooks
// off, no daemon). Windows: creation until all are available, idle, a full in-place rollout of
// every pod to a new image (timed until every CloneSet reports all replicas updated and
// available), idle again. Idle must show no reconcile and no API request but Lease renewals.
func TestCloneSetScale(t *testing.T) {
	dir := runDir(t, "BENCH_CLONESET_SCALE_DIR", "kruise-cloneset-scale-")
	total := csSets * csPods
	t.Logf("shape: %d CloneSets x %d pods = %d pods on %d kwok nodes; maxUnavailable %s; controller QPS %d; idle %s; dir %s",
		csSets, csPods, total, csNodes, csScaleMaxUnavailable, csQPS, csIdle, dir)
	ctx := context.Background()

	c := startKWOKCluster(t, dir, filepath.Join("testdata", "kwok-stages.yaml"))
	c.createNodes(t, csNodes)
	for _, ns := range []string{controller.DefaultNamespace, csNamespace} {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	probe := startHostController(t, c, dir, csQPS)
	waitQuiet(ctx, t, probe)

	var windows []*window
	// 1. Creation: every CloneSet created until all pods are available and the controller quiet.
	peak := watchRSS(probe.pid, 500*time.Millisecond)
	s0 := mustSnapshot(ctx, t, probe)
	if err := createCloneSets(ctx, c.kruise, csSets, csPods); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	created := waitCloneSets(ctx, t, c.kruise, "created", csSets, csPods, false)
	waitQuiet(ctx, t, probe)
	s1 := mustSnapshot(ctx, t, probe)
	windows = append(windows, mustMeasure(t, probe, "create", s0, s1, peak.Stop()))
	before := podUIDs(ctx, t, c, total)

	// 2. Idle: nothing changes.
	windows = append(windows, measureIdle(ctx, t, probe, "idle", csIdle))

	// 3. Rollout: every CloneSet's image changes; in place, every pod keeps its UID.
	peak = watchRSS(probe.pid, 500*time.Millisecond)
	m0 := mustScrapeCloneSet(ctx, t, probe)
	s2 := mustSnapshot(ctx, t, probe)
	if err := setImage(ctx, c.kruise, csSets, csImageV2); err != nil {
		peak.Stop()
		t.Fatal(err)
	}
	rollout := waitCloneSets(ctx, t, c.kruise, "rolled out", csSets, csPods, true)
	waitQuiet(ctx, t, probe)
	s3 := mustSnapshot(ctx, t, probe)
	windows = append(windows, mustMeasure(t, probe, "rollout", s2, s3, peak.Stop()))
	m1 := mustScrapeCloneSet(ctx, t, probe)
	checkRolledOut(ctx, t, c, before)

	// 4. Idle again, after every pod has changed once.
	windows = append(windows, measureIdle(ctx, t, probe, "idle after rollout", csIdle))

	var rows []string
	for _, w := range windows {
		t.Log(w.describe())
		rows = append(rows, fmt.Sprintf("| %s | %.0f s | %.2f%% | %s / %s | %.0f (%.2f/s) | %d (%.2f/s) | %.0f%% |", w.name, w.seconds(), w.cpu(),
			mib(w.to.proc.rss), mib(w.peakRSS), w.reconcileSum, w.reconcileSum/w.seconds(), len(w.requests), float64(len(w.requests))/w.seconds(),
			cpuPercent(w.from.apiserver, w.to.apiserver)))
	}
	inPlace := m1.updated["inplace"] - m0.updated["inplace"]
	recreated := m1.updated["recreate"] - m0.updated["recreate"]
	var meanInPlace float64
	if n := m1.inPlaceCount - m0.inPlaceCount; n > 0 {
		meanInPlace = (m1.inPlaceSum - m0.inPlaceSum) / n
	}
	t.Logf("all %d CloneSets available %s after the first create; rolled out in place %s after the first image change (%.0f pods/s); "+
		"pods updated in place %.0f, recreated %.0f; mean in-place update (start to InPlaceUpdateReady) %.1f s",
		csSets, created.Round(time.Second), rollout.Round(time.Second), float64(total)/rollout.Seconds(), inPlace, recreated, meanInPlace)
	t.Logf("Summary (markdown):\n| window | duration | controller CPU (one core) | RSS end / peak | reconciles | API requests (no Lease, no watch) | kube-apiserver CPU |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n%s",
		strings.Join(rows, "\n"))

	if inPlace != float64(total) || recreated != 0 {
		t.Errorf("rollout: %.0f pods updated in place and %.0f recreated, want %d and 0", inPlace, recreated, total)
	}
	for _, w := range windows {
		if !strings.HasPrefix(w.name, "idle") {
			continue
		}
		if w.reconcileSum != 0 {
			t.Errorf("%s: %.0f reconciles (%s), want 0", w.name, w.reconcileSum, breakdownF(w.reconciles))
		}
		if len(w.requests) != 0 {
			t.Errorf("%s: %d API requests besides Lease renewals and watches (%s), want 0", w.name, len(w.requests),
				breakdown(countBy(w.requests, func(e *auditEvent) string { return e.Verb + " " + e.Resource() })))
		}
		if cpu := w.cpu(); cpu > targetCPUPercent {
			t.Logf("NOT MET: %s CPU %.2f%% above %.0f%% of a core", w.name, cpu, targetCPUPercent)
		}
	}
	for _, w := range windows {
		if w.peakRSS > targetRSS {
			t.Logf("NOT MET: %s: peak RSS %s above %s", w.name, mib(w.peakRSS), mib(targetRSS))
		}
	}
}

// measureIdle measures d of nothing happening.
func measureIdle(ctx context.Context, t *testing.T, probe *leaderProbe, name string, d time.Duration) *window {
	t.Helper()
	peak := watchRSS(probe.pid, time.Second)
	from := mustSnapshot(ctx, t, probe)
	time.Sleep(d) // the window itself: nothing is awaited
	to := mustSnapshot(ctx, t, probe)
	return mustMeasure(t, probe, name, from, to, peak.Stop())
}

func csName(i int) string { return fmt.Sprintf("cs-%03d", i) }

// createCloneSets creates sets CloneSets of pods replicas each, updated in place when possible.
// They are v1beta1, the version the controller reads and the CRD stores: with webhooks off there
// is no conversion, and a v1alpha1 updateStrategy would be read as v1beta1's (ReCreate).
func createCloneSets(ctx context.Context, client versioned.Interface, sets, pods int) error {
	mu := intstr.Parse(csScaleMaxUnavailable)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range sets {
		g.Go(func() error {
			labels := map[string]string{"app": csName(i)}
			cs := &appsv1beta1.CloneSet{
				ObjectMeta: metav1.ObjectMeta{Name: csName(i), Namespace: csNamespace},
				Spec: appsv1beta1.CloneSetSpec{
					Replicas: ptr.To(int32(pods)),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{
							Containers: []corev1.Container{{Name: "app", Image: csImageV1}},
						},
					},
					UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
						Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
						RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
							PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
							MaxUnavailable:  &mu,
						},
					},
				},
			}
			if _, err := client.AppsV1beta1().CloneSets(csNamespace).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating CloneSet %s: %w", cs.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// setImage changes every CloneSet's container image.
func setImage(ctx context.Context, client versioned.Interface, sets int, image string) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range sets {
		g.Go(func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cs, err := client.AppsV1beta1().CloneSets(csNamespace).Get(ctx, csName(i), metav1.GetOptions{})
				if err != nil {
					return err
				}
				cs.Spec.Template.Spec.Containers[0].Image = image
				_, err = client.AppsV1beta1().CloneSets(csNamespace).Update(ctx, cs, metav1.UpdateOptions{})
				return err
			})
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("setting image %s: %w", image, err)
	}
	return nil
}

// cloneSetDone is whether a CloneSet's status reports its spec observed and every replica
// available and, after an update, updated.
func cloneSetDone(cs *appsv1beta1.CloneSet, pods int32, updated bool) bool {
	s := cs.Status
	done := s.ObservedGeneration == cs.Generation && s.Replicas == pods && s.ReadyReplicas == pods && s.AvailableReplicas == pods
	if updated {
		done = done && s.UpdatedReplicas == pods && s.UpdatedReadyReplicas == pods && s.UpdatedAvailableReplicas == pods
	}
	return done
}

// waitCloneSets waits until every CloneSet is done and returns how long that took.
func waitCloneSets(ctx context.Context, t *testing.T, client versioned.Interface, what string, sets, pods int, updated bool) time.Duration {
	t.Helper()
	start, lastLog := time.Now(), time.Now()
	done, podsUpdated := 0, int32(0)
	err := wait.PollUntilContextTimeout(ctx, time.Second, csTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.AppsV1beta1().CloneSets(csNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done, podsUpdated = 0, 0
		for i := range list.Items {
			if cloneSetDone(&list.Items[i], int32(pods), updated) {
				done++
			}
			podsUpdated += list.Items[i].Status.UpdatedAvailableReplicas
		}
		if time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			t.Logf("%s: %d/%d CloneSets %s, %d pods updated and available", time.Since(start).Round(time.Second), done, sets, what, podsUpdated)
		}
		return done == sets, nil
	})
	if err != nil {
		t.Fatalf("after %s, %d of %d CloneSets %s (%d pods updated and available): %v", time.Since(start).Round(time.Second), done, sets, what, podsUpdated, err)
	}
	took := time.Since(start)
	t.Logf("all %d CloneSets %s in %s", sets, what, took.Round(time.Second))
	return took
}

// podUIDs lists the benchmark's pods by name, checking there are total of them.
func podUIDs(ctx context.Context, t *testing.T, c *kwokCluster, total int) map[string]string {
	t.Helper()
	list, err := c.kube.CoreV1().Pods(csNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range list.Items {
		out[list.Items[i].Name] = string(list.Items[i].UID)
	}
	if len(out) != total {
		t.Fatalf("%d pods, want %d", len(out), total)
	}
	return out
}

// checkRolledOut asserts every pod of before is still there (same UID: updated in place), runs
// the new image by its status, was restarted once and is InPlaceUpdateReady.
func checkRolledOut(ctx context.Context, t *testing.T, c *kwokCluster, before map[string]string) {
	t.Helper()
	list, err := c.kube.CoreV1().Pods(csNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]int{}
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case before[p.Name] != string(p.UID):
			bad["not one of the pods before"]++
		case len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Image != csImageV2:
			bad["status not at the new image"]++
		case p.Status.ContainerStatuses[0].RestartCount != 1:
			bad["not restarted exactly once"]++
		case !conditionTrue(p, pub.InPlaceUpdateReady):
			bad["InPlaceUpdateReady not True"]++
		}
	}
	if len(list.Items) != len(before) || len(bad) > 0 {
		t.Errorf("after the rollout: %d pods (want %d); %s", len(list.Items), len(before), breakdown(bad))
	}
}

func conditionTrue(p *corev1.Pod, ct corev1.PodConditionType) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == ct {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
