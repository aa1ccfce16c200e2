//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The SidecarSet upgrade benchmark's settings.
var (
	ssPods           = envInt("BENCH_SIDECARSET_PODS", 30)
	ssMaxUnavailable = envInt("BENCH_SIDECARSET_MAX_UNAVAILABLE", 3)
	ssRounds         = envInt("BENCH_SIDECARSET_ROUNDS", 3)
	ssFloorSamples   = envInt("BENCH_SIDECARSET_FLOOR_SAMPLES", 3)
)

const (
	sidecarContainer = "sidecar"
	ssInPlace        = "kruise SidecarSet, sidecar upgraded in place"
	ssDeployment     = "Deployment (built-in) with the sidecar in its template, rolling update"
)

// TestSidecarSetUpgrade measures, in one run, the time from a sidecar image change to every pod
// running the new sidecar, Ready: a SidecarSet's in-place upgrade of the sidecar it injected into
// a Deployment's N pods, against the only way without SidecarSet, a rolling update of a
// Deployment that carries the sidecar in its template. Both have the same availability budget
// (maxUnavailable M, no surge). The floor is one container's restart by a direct image patch of
// a bare pod. Variants take turns within each round.
func TestSidecarSetUpgrade(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-ss", "bench-sidecarset")
	n, m, rounds, fs := ssPods, ssMaxUnavailable, ssRounds, ssFloorSamples
	t.Logf("%d pods, maxUnavailable %d, %d rounds, %d floor samples per round", n, m, rounds, fs)
	imgs := e.rolloutImages(ctx, t, rounds+rounds*fs)
	targets, floorImgs := imgs[:rounds], imgs[rounds:]

	start := time.Now()
	// The SidecarSet is cluster-scoped: named after the namespace, and its pods labelled so.
	ssName := e.ns + "-sidecar"
	ss, err := e.kruise.AppsV1beta1().SidecarSets().Create(ctx, benchSidecarSet(e.ns, ssName, image, m), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the SidecarSet: %v", err)
	}
	t.Cleanup(func() {
		if err := e.kruise.AppsV1beta1().SidecarSets().Delete(context.Background(), ss.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting SidecarSet %s: %v", ss.Name, err)
		}
	})
	e.waitInjecting(ctx, t, ssName)
	injected := rolloutDeployment(e.ns, "injected", shapeMinimal, image, int32(n), int32(m))
	injected.Spec.Selector.MatchLabels[appLabel] = ssName
	injected.Spec.Template.Labels[appLabel] = ssName
	templated := rolloutDeployment(e.ns, "templated", shapeMinimal, image, int32(n), int32(m))
	templated.Spec.Template.Spec.Containers = append([]corev1.Container{benchSidecar(image)}, templated.Spec.Template.Spec.Containers...)
	for _, d := range []*appsv1.Deployment{injected, templated} {
		if _, err := e.client.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Deployment %s: %v", d.Name, err)
		}
	}
	arms := []wlArm{
		{wlVariant(ssInPlace), sidecarSetWorkload(e.kruise, ssName, int32(n)), n, true, true},
		{wlVariant(ssDeployment), sidecarDeploymentWorkload(e.client, e.ns, "templated", int32(n)), n, false, false},
	}
	floors, err := e.createFloorPods(ctx, "floor", fs, shapeMinimal, image)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		pods, _, err := e.settledPods(ctx, e.ns, a.w.name(), a.pods)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if specImage(&p, sidecarContainer) == "" {
				t.Fatalf("pod %s of %s has no %s container: not injected?", p.Name, a.v, sidecarContainer)
			}
		}
	}
	t.Logf("workloads Ready: %s; %d live pods on the node; load average %s", time.Since(start).Round(time.Second), e.livePods(ctx, t), loadAverage())

	rollouts := map[wlVariant][]rolloutRun{}
	var floor []floorRun
	t.Cleanup(func() { reportSidecarSetUpgrade(t, n, m, rollouts, floor) })
	nextFloor := 0
	for round := range rounds {
		for k := range len(arms) + 1 {
			i := (round + k) % (len(arms) + 1)
			if i == len(arms) {
				for sample := range fs {
					r, err := e.measureFloor(ctx, floors.pod(sample), floorImgs[nextFloor])
					nextFloor++
					if err != nil {
						t.Fatalf("floor: %v", err)
					}
					floor = append(floor, r)
					t.Logf("round %d %-72s Ready %6.3f s", round, string(wlFloorVariant), r.ready.Seconds())
				}
				continue
			}
			a := arms[i]
			r, err := e.measureRollout(ctx, e.ns, a.w, a.pods, targets[round], nil)
			if err != nil {
				t.Fatalf("%s: %v", a.v, err)
			}
			wantKept := 0
			if a.inPlace {
				wantKept = a.pods
			}
			if r.kept != wantKept {
				t.Errorf("%s: %d of %d pods kept their UID, want %d", a.v, r.kept, a.pods, wantKept)
			}
			rollouts[a.v] = append(rollouts[a.v], r)
			t.Logf("round %d %-72s done %7.3f s  last pod Ready %7.3f s", round, a.v, r.done.Seconds(), r.lastReady.Seconds())
		}
	}
}

// waitInjecting waits until the pod webhook injects SidecarSet name into a pod of the bench's
// namespace labelled for it (a dry-run create): the webhook's scope follows new SidecarSets a
// moment after they are created.
func (e *env) waitInjecting(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: e.ns, Labels: map[string]string{appLabel: name}},
		Spec:       rolloutPodSpec(image),
	}
	_, err := framework.Poll(ctx, time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := e.client.CoreV1().Pods(e.ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		got := specImage(p, sidecarContainer)
		return got != "", fmt.Sprintf("dry-run pod has containers %v", containerNames(p)), nil
	})
	if err != nil {
		t.Fatalf("SidecarSet %s never injected: %v", name, err)
	}
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// benchSidecar is the sidecar both variants run: a process that exits on TERM, no probe (Ready
// as soon as it runs).
func benchSidecar(img string) corev1.Container {
	return corev1.Container{
		Name:    sidecarContainer,
		Image:   img,
		Command: []string{"sh", "-c", `trap "exit 0" TERM; while true; do sleep 1; done`},
	}
}

// benchSidecarSet injects benchSidecar into the pods labelled app=name of namespace ns, and
// upgrades it in place, maxUnavailable at a time.
func benchSidecarSet(ns, name, img string, maxUnavailable int) *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers: []appsv1beta1.SidecarContainer{{
				Container:       benchSidecar(img),
				PodInjectPolicy: appsv1beta1.BeforeAppContainerType,
			}},
			UpdateStrategy: appsv1beta1.SidecarSetUpdateStrategy{
				Type:           appsv1beta1.RollingUpdateSidecarSetStrategyType,
				MaxUnavailable: ptr.To(intstr.FromInt(maxUnavailable)),
			},
		},
	}
}

func sidecarSetWorkload(c versioned.Interface, name string, n int32) workload {
	return apiWorkload[*appsv1beta1.SidecarSet]{kind: "SidecarSet", c: c.AppsV1beta1().SidecarSets(), nm: name, n: n,
		podSpec: "/spec", ctr: sidecarContainer,
		settled: func(ss *appsv1beta1.SidecarSet, n int32) bool {
			s := ss.Status
			return s.ObservedGeneration >= ss.Generation && s.MatchedPods == n && s.UpdatedPods == n && s.ReadyPods == n &&
				s.UpdatedReadyPods == n
		},
		status: func(ss *appsv1beta1.SidecarSet) any { return ss.Status }}
}

// sidecarDeploymentWorkload is a Deployment whose first container is the sidecar.
func sidecarDeploymentWorkload(c kubernetes.Interface, ns, name string, n int32) workload {
	w := deploymentWorkload(c, ns, name, n).(apiWorkload[*appsv1.Deployment])
	w.ctr = sidecarContainer
	return w
}

func reportSidecarSetUpgrade(t *testing.T, n, m int, rollouts map[wlVariant][]rolloutRun, floor []floorRun) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	var b strings.Builder
	fmt.Fprintf(&b, "\nsidecar image change → every pod Ready with the new sidecar (%d pods, maxUnavailable %d, no surge)\n\n", n, m)
	fmt.Fprintf(&b, "| variant | rounds | status done, median | last pod Ready, median | min | max |\n| --- | --- | --- | --- | --- | --- |\n")
	med := map[wlVariant]time.Duration{}
	for _, v := range []wlVariant{ssInPlace, ssDeployment} {
		var done, last []time.Duration
		for _, r := range rollouts[v] {
			done, last = append(done, r.done), append(last, r.lastReady)
		}
		if len(done) == 0 {
			continue
		}
		med[v] = median(done)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", v, len(done), sec(med[v]), sec(median(last)), sec(slices.Min(done)), sec(slices.Max(done)))
	}
	var fl []time.Duration
	for _, f := range floor {
		fl = append(fl, f.ready)
	}
	var single time.Duration
	if len(fl) > 0 {
		single = median(fl)
		fmt.Fprintf(&b, "| floor: one restart (image patch of a bare pod → Ready) | %d samples | %s | | %s | %s |\n", len(fl), sec(single), sec(slices.Min(fl)), sec(slices.Max(fl)))
	}
	ratio := func(a, b time.Duration) string {
		if a == 0 || b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", a.Seconds()/b.Seconds())
	}
	batches := (n + m - 1) / m
	fmt.Fprintf(&b, "\nratios of medians (same run)\n\n| ratio | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| Deployment rolling update / SidecarSet in place | %s |\n", ratio(med[ssDeployment], med[ssInPlace]))
	fmt.Fprintf(&b, "| SidecarSet in place / floor (%d batches × one restart) | %s |\n", batches, ratio(med[ssInPlace], time.Duration(batches)*single))
	t.Log(b.String())
}
