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

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// The Advanced StatefulSet and DaemonSet rollout benchmark's settings.
var (
	wlStatefulReplicas = envInt("BENCH_WORKLOAD_STS_REPLICAS", 10)
	wlRounds           = envInt("BENCH_WORKLOAD_ROUNDS", 3)
	wlFloorSamples     = envInt("BENCH_WORKLOAD_FLOOR_SAMPLES", 3)
	// BENCH_WORKLOAD_OPENKRUISE=0 leaves OpenKruise's phase out (while developing).
	wlOpenKruise = envStr("BENCH_WORKLOAD_OPENKRUISE", "1") != "0"
	// BENCH_WORKLOAD_TRACE=1 logs every pod and workload event of the rollouts.
	wlTrace = envStr("BENCH_WORKLOAD_TRACE", "0") == "1"
)

// wlVariant is one workload rolled to a new image.
type wlVariant string

const (
	wlSTSInPlace   wlVariant = "kruise Advanced StatefulSet, InPlaceIfPossible"
	wlSTSRecreate  wlVariant = "kruise Advanced StatefulSet, ReCreate"
	wlSTSBuiltin   wlVariant = "StatefulSet (built-in), RollingUpdate"
	wlADSInPlace   wlVariant = "kruise Advanced DaemonSet, InPlaceIfPossible"
	wlADSStandard  wlVariant = "kruise Advanced DaemonSet, Standard"
	wlADSBuiltin   wlVariant = "DaemonSet (built-in), RollingUpdate"
	wlSTSOK        wlVariant = "OpenKruise v1.9.0 Advanced StatefulSet, InPlaceIfPossible"
	wlADSOK        wlVariant = "OpenKruise v1.9.0 Advanced DaemonSet, InPlaceIfPossible"
	wlFloorVariant wlVariant = "floor"
	wlDaemonPods             = 1 // the local cluster has one node
)

// TestWorkloadRollout measures, in one run, the time from a template image change to the
// workload's status showing every pod updated, ready and available: an Advanced StatefulSet of
// N pods (OrderedReady, one pod at a time) in place and by recreation against the built-in
// StatefulSet, and an Advanced DaemonSet's pod on the node in place and by recreation against the
// built-in DaemonSet; and the floor, one container's restart by a direct image patch of a bare
// pod (the kubelet alone). Variants take turns within each round. A second phase measures
// OpenKruise v1.9.0's Advanced StatefulSet and DaemonSet in place, with the same pods on the node.
func TestWorkloadRollout(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-wl", "bench-workloads")
	n, rounds, fs := wlStatefulReplicas, wlRounds, wlFloorSamples
	t.Logf("StatefulSets of %d pods, DaemonSets of %d, %d rounds, %d floor samples per round and phase", n, wlDaemonPods, rounds, fs)
	var build openKruiseBuild
	if wlOpenKruise {
		var err error
		if build, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}
	imgs := e.rolloutImages(ctx, t, rounds+2*rounds*fs)
	targets, floorImgs := imgs[:rounds], imgs[rounds:]
	arms := []wlArm{
		{wlSTSInPlace, advancedStatefulSetWorkload(e.kruise, e.ns, "sts-inplace", int32(n)), n, true, true},
		{wlSTSRecreate, advancedStatefulSetWorkload(e.kruise, e.ns, "sts-recreate", int32(n)), n, false, true},
		{wlSTSBuiltin, builtinStatefulSetWorkload(e.client, e.ns, "sts-builtin", int32(n)), n, false, false},
		{wlADSInPlace, advancedDaemonSetWorkload(e.kruise, e.ns, "ads-inplace", wlDaemonPods), wlDaemonPods, true, true},
		{wlADSStandard, advancedDaemonSetWorkload(e.kruise, e.ns, "ads-standard", wlDaemonPods), wlDaemonPods, false, true},
		{wlADSBuiltin, builtinDaemonSetWorkload(e.client, e.ns, "ds-builtin", wlDaemonPods), wlDaemonPods, false, false},
	}
	start := time.Now()
	create := []func() error{
		func() error {
			_, err := e.kruise.AppsV1beta1().StatefulSets(e.ns).Create(ctx, rolloutStatefulSet(e.ns, "sts-inplace", image, int32(n), appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.kruise.AppsV1beta1().StatefulSets(e.ns).Create(ctx, rolloutStatefulSet(e.ns, "sts-recreate", image, int32(n), appsv1beta1.RecreatePodUpdateStrategyType), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.client.AppsV1().StatefulSets(e.ns).Create(ctx, builtinRolloutStatefulSet(e.ns, "sts-builtin", image, int32(n)), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.kruise.AppsV1beta1().DaemonSets(e.ns).Create(ctx, rolloutDaemonSet(e.ns, "ads-inplace", image, appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.kruise.AppsV1beta1().DaemonSets(e.ns).Create(ctx, rolloutDaemonSet(e.ns, "ads-standard", image, appsv1beta1.StandardDaemonSetRollingUpdateType), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.client.AppsV1().DaemonSets(e.ns).Create(ctx, builtinRolloutDaemonSet(e.ns, "ds-builtin", image), metav1.CreateOptions{})
			return err
		},
	}
	for i, c := range create {
		if err := c(); err != nil {
			t.Fatalf("creating %s: %v", arms[i].v, err)
		}
	}
	floors, err := e.createFloorPods(ctx, "floor", fs, shapeMinimal, image)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		if _, _, err := e.settledPods(ctx, e.ns, a.w.name(), a.pods); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("workloads Ready: %s; %d live pods on the node; load average %s", time.Since(start).Round(time.Second), e.livePods(ctx, t), loadAverage())

	res := wlResults{rollout: map[wlVariant][]rolloutRun{}, floor: map[string][]floorRun{}}
	t.Cleanup(func() { res.report(t, n) })
	nextFloor := 0
	turns := func(phase, ns string, arms []wlArm) {
		t.Helper()
		for round := range rounds {
			for k := range len(arms) + 1 {
				i := (round + k) % (len(arms) + 1)
				if i == len(arms) {
					for sample := range fs {
						r, err := e.measureFloor(ctx, floors.pod(sample), floorImgs[nextFloor])
						nextFloor++
						if err != nil {
							t.Fatalf("%s, floor: %v", phase, err)
						}
						res.floor[phase] = append(res.floor[phase], r)
						t.Logf("round %d %-58s Ready %6.3f s", round, phase+" "+string(wlFloorVariant), r.ready.Seconds())
					}
					continue
				}
				a := arms[i]
				var trace func(string, ...any)
				if wlTrace {
					trace = t.Logf
				}
				r, err := e.measureRollout(ctx, ns, a.w, a.pods, targets[round], trace)
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
				res.rollout[a.v] = append(res.rollout[a.v], r)
				t.Logf("round %d %-58s done %7.3f s  last pod Ready %7.3f s", round, a.v, r.done.Seconds(), r.lastReady.Seconds())
			}
		}
	}
	start = time.Now()
	turns(phaseKruise, e.ns, arms)
	t.Logf("%s: %s; load average %s", phaseKruise, time.Since(start).Round(time.Second), loadAverage())
	if !wlOpenKruise {
		return
	}
	e.openKruiseWorkloadPhase(ctx, t, build, arms, func(ns string, arms []wlArm) { turns(phaseOK, ns, arms) })
}

// wlArm is a workload the benchmark rolls.
type wlArm struct {
	v    wlVariant
	w    workload
	pods int
	// inPlace: every pod keeps its UID.
	inPlace bool
	// kruise: an Advanced StatefulSet or DaemonSet, which OpenKruise's phase must not find.
	kruise bool
}

// openKruiseWorkloadPhase runs OpenKruise's Advanced StatefulSet and DaemonSet in place through
// turns, with the same pods on the node: kruise's workloads are deleted with their pods orphaned
// (left running, ownerless), and kruise-controller is fenced while OpenKruise's exist.
func (e *env) openKruiseWorkloadPhase(ctx context.Context, t *testing.T, build openKruiseBuild, kruiseArms []wlArm, turns func(ns string, arms []wlArm)) {
	start := time.Now()
	for _, a := range kruiseArms {
		if a.kruise {
			if err := e.orphanPods(ctx, e.ns, a.w, a.pods); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("kruise's workloads gone, their pods orphaned: %s", time.Since(start).Round(time.Second))
	n := int(wlStatefulReplicas)
	e.openKruisePhase(ctx, t, build, []string{"statefulset-controller", "daemonset-controller"},
		func(ns string) []workload {
			return []workload{advancedStatefulSetWorkload(e.kruise, ns, "ok-sts", int32(n)), advancedDaemonSetWorkload(e.kruise, ns, "ok-ads", wlDaemonPods)}
		},
		func(ns string, ws []workload) {
			start := time.Now()
			if _, err := e.kruise.AppsV1beta1().StatefulSets(ns).Create(ctx, rolloutStatefulSet(ns, ws[0].name(), image, int32(n),
				appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType), metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating OpenKruise's StatefulSet: %v", err)
			}
			if _, err := e.kruise.AppsV1beta1().DaemonSets(ns).Create(ctx, rolloutDaemonSet(ns, ws[1].name(), image,
				appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType), metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating OpenKruise's DaemonSet: %v", err)
			}
			arms := []wlArm{{wlSTSOK, ws[0], n, true, false}, {wlADSOK, ws[1], wlDaemonPods, true, false}}
			for _, a := range arms {
				pods, _, err := e.settledPods(ctx, ns, a.w.name(), a.pods)
				if err != nil {
					t.Fatal(err)
				}
				if len(pods[0].OwnerReferences) == 0 {
					t.Fatalf("pod %s of %s has no owner: not created by OpenKruise's controller?", pods[0].Name, a.v)
				}
			}
			t.Logf("OpenKruise's workloads Ready: %s; %d live pods on the node", time.Since(start).Round(time.Second), e.livePods(ctx, t))
			start = time.Now()
			turns(ns, arms)
			t.Logf("%s: %s; load average %s", phaseOK, time.Since(start).Round(time.Second), loadAverage())
		})
}

// wlResults are the figures of one run.
type wlResults struct {
	rollout map[wlVariant][]rolloutRun
	floor   map[string][]floorRun // per phase
}

func (res wlResults) report(t *testing.T, n int) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	med := map[wlVariant]time.Duration{}
	var b strings.Builder
	fmt.Fprintf(&b, "\nspec update → status: every pod updated, ready, available (watch event received)\n\n")
	fmt.Fprintf(&b, "| variant | pods | rounds | median | min | max |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, v := range []wlVariant{wlSTSInPlace, wlSTSRecreate, wlSTSBuiltin, wlSTSOK, wlADSInPlace, wlADSStandard, wlADSBuiltin, wlADSOK} {
		var ds []time.Duration
		for _, r := range res.rollout[v] {
			ds = append(ds, r.done)
		}
		if len(ds) == 0 {
			continue
		}
		pods := n
		if strings.Contains(string(v), "DaemonSet") {
			pods = wlDaemonPods
		}
		med[v] = median(ds)
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s |\n", v, pods, len(ds), sec(med[v]), sec(slices.Min(ds)), sec(slices.Max(ds)))
	}
	single := map[string]time.Duration{}
	for _, phase := range []string{phaseKruise, phaseOK} {
		var rs []time.Duration
		for _, f := range res.floor[phase] {
			rs = append(rs, f.ready)
		}
		if len(rs) == 0 {
			continue
		}
		single[phase] = median(rs)
		fmt.Fprintf(&b, "| floor, %s: one restart (image patch of a bare pod → Ready; %d samples) | 1 | | %s | %s | %s |\n",
			phase, len(rs), sec(single[phase]), sec(slices.Min(rs)), sec(slices.Max(rs)))
	}
	ratio := func(a, b time.Duration) string {
		if a == 0 || b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", a.Seconds()/b.Seconds())
	}
	stsFloor := time.Duration(n) * single[phaseKruise] // OrderedReady: one pod at a time
	fmt.Fprintf(&b, "\nratios of medians (same run)\n\n| ratio | value |\n| --- | --- |\n")
	for _, r := range []struct {
		name string
		a, b time.Duration
	}{
		{"built-in StatefulSet / Advanced StatefulSet in place", med[wlSTSBuiltin], med[wlSTSInPlace]},
		{"Advanced StatefulSet in place / OpenKruise's", med[wlSTSInPlace], med[wlSTSOK]},
		{"Advanced StatefulSet ReCreate / in place", med[wlSTSRecreate], med[wlSTSInPlace]},
		{fmt.Sprintf("Advanced StatefulSet in place / floor (%d × one restart)", n), med[wlSTSInPlace], stsFloor},
		{"built-in DaemonSet / Advanced DaemonSet in place", med[wlADSBuiltin], med[wlADSInPlace]},
		{"Advanced DaemonSet in place / OpenKruise's", med[wlADSInPlace], med[wlADSOK]},
		{"Advanced DaemonSet Standard / in place", med[wlADSStandard], med[wlADSInPlace]},
		{"Advanced DaemonSet in place / floor (one restart)", med[wlADSInPlace], single[phaseKruise]},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", r.name, ratio(r.a, r.b))
	}
	t.Log(b.String())
}

// rolloutStatefulSet is an Advanced StatefulSet of the rollout pod, OrderedReady, one pod at a
// time; in place needs the InPlaceUpdateReady readiness gate in the template. Every field
// OpenKruise's defaulting webhook would set is written out (it is not installed: OpenKruise's
// controller must find them set).
func rolloutStatefulSet(ns, name, img string, replicas int32, policy appsv1beta1.PodUpdateStrategyType) *appsv1beta1.StatefulSet {
	tmpl := rolloutTemplate(name, img)
	if policy != appsv1beta1.RecreatePodUpdateStrategyType {
		tmpl.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	}
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:             ptr.To(replicas),
			ServiceName:          name,
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:             tmpl,
			PodManagementPolicy:  appsv1.OrderedReadyPodManagement,
			RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
					Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1)), PodUpdatePolicy: policy,
					MinReadySeconds: ptr.To[int32](0),
				},
			},
			PersistentVolumeClaimRetentionPolicy: &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

func builtinRolloutStatefulSet(ns, name, img string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:    rolloutTemplate(name, img),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
			},
		},
	}
}

// rolloutDaemonSet is an Advanced DaemonSet of the rollout pod: maxUnavailable 1, maxSurge 0,
// with OpenKruise's defaults written out.
func rolloutDaemonSet(ns, name, img string, typ appsv1beta1.DaemonSetRollingUpdateType) *appsv1beta1.DaemonSet {
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:             rolloutTemplate(name, img),
			BurstReplicas:        ptr.To(intstr.FromInt32(250)),
			RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: typ,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))},
			},
		},
	}
}

func builtinRolloutDaemonSet(ns, name, img string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template: rolloutTemplate(name, img),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			},
		},
	}
}

func advancedStatefulSetWorkload(c versioned.Interface, ns, name string, n int32) workload {
	return apiWorkload[*appsv1beta1.StatefulSet]{kind: "Advanced StatefulSet", c: c.AppsV1beta1().StatefulSets(ns), nm: name, n: n,
		settled: func(s *appsv1beta1.StatefulSet, n int32) bool {
			st := s.Status
			return st.ObservedGeneration >= s.Generation && st.Replicas == n && st.UpdatedReplicas == n && st.ReadyReplicas == n &&
				st.AvailableReplicas == n && st.UpdatedReadyReplicas == n && st.CurrentRevision == st.UpdateRevision
		},
		status: func(s *appsv1beta1.StatefulSet) any { return s.Status }}
}

func builtinStatefulSetWorkload(c kubernetes.Interface, ns, name string, n int32) workload {
	return apiWorkload[*appsv1.StatefulSet]{kind: "StatefulSet", c: c.AppsV1().StatefulSets(ns), nm: name, n: n,
		settled: func(s *appsv1.StatefulSet, n int32) bool {
			st := s.Status
			return st.ObservedGeneration >= s.Generation && st.Replicas == n && st.UpdatedReplicas == n && st.ReadyReplicas == n &&
				st.AvailableReplicas == n && st.CurrentRevision == st.UpdateRevision
		},
		status: func(s *appsv1.StatefulSet) any { return s.Status }}
}

func advancedDaemonSetWorkload(c versioned.Interface, ns, name string, n int32) workload {
	return apiWorkload[*appsv1beta1.DaemonSet]{kind: "Advanced DaemonSet", c: c.AppsV1beta1().DaemonSets(ns), nm: name, n: n,
		settled: func(d *appsv1beta1.DaemonSet, n int32) bool {
			st := d.Status
			return st.ObservedGeneration >= d.Generation && st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n &&
				st.NumberReady == n && st.NumberAvailable == n && st.NumberUnavailable == 0
		},
		status: func(d *appsv1beta1.DaemonSet) any { return d.Status }}
}

func builtinDaemonSetWorkload(c kubernetes.Interface, ns, name string, n int32) workload {
	return apiWorkload[*appsv1.DaemonSet]{kind: "DaemonSet", c: c.AppsV1().DaemonSets(ns), nm: name, n: n,
		settled: func(d *appsv1.DaemonSet, n int32) bool {
			st := d.Status
			return st.ObservedGeneration >= d.Generation && st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n &&
				st.NumberReady == n && st.NumberAvailable == n && st.NumberUnavailable == 0
		},
		status: func(d *appsv1.DaemonSet) any { return d.Status }}
}
