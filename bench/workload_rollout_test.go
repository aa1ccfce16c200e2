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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
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
	wlFloorVariant wlVariant = "floor"
	wlDaemonPods             = 1 // the local cluster has one node
)

// TestWorkloadRollout measures, in one run, the time from a template image change to the
// workload's status showing every pod updated, ready and available: an Advanced StatefulSet of
// N pods (OrderedReady, one pod at a time) in place and by recreation against the built-in
// StatefulSet, and an Advanced DaemonSet's pod on the node in place and by recreation against the
// built-in DaemonSet; and the floor, one container's restart by a direct image patch of a bare
// pod (the kubelet alone). Variants take turns within each round.
func TestWorkloadRollout(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-wl", "bench-workloads")
	n, rounds, fs := wlStatefulReplicas, wlRounds, wlFloorSamples
	t.Logf("StatefulSets of %d pods, DaemonSets of %d, %d rounds, %d floor samples per round", n, wlDaemonPods, rounds, fs)
	imgs := e.rolloutImages(ctx, t, rounds+rounds*fs)
	targets, floorImgs := imgs[:rounds], imgs[rounds:]

	type arm struct {
		v    wlVariant
		w    workload
		pods int
		// inPlace: every pod keeps its UID.
		inPlace bool
	}
	arms := []arm{
		{wlSTSInPlace, kruiseStatefulSetWorkload{e.kruise, e.ns, "sts-inplace", int32(n)}, n, true},
		{wlSTSRecreate, kruiseStatefulSetWorkload{e.kruise, e.ns, "sts-recreate", int32(n)}, n, false},
		{wlSTSBuiltin, builtinStatefulSetWorkload{e.client, e.ns, "sts-builtin", int32(n)}, n, false},
		{wlADSInPlace, kruiseDaemonSetWorkload{e.kruise, e.ns, "ads-inplace", wlDaemonPods}, wlDaemonPods, true},
		{wlADSStandard, kruiseDaemonSetWorkload{e.kruise, e.ns, "ads-standard", wlDaemonPods}, wlDaemonPods, false},
		{wlADSBuiltin, builtinDaemonSetWorkload{e.client, e.ns, "ds-builtin", wlDaemonPods}, wlDaemonPods, false},
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
	const floorPod = "floor"
	if err := e.createFloorPod(ctx, floorPod, image); err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		if _, _, err := e.settledPods(ctx, e.ns, a.w.name(), a.pods); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("workloads Ready: %s; %d live pods on the node; load average %s", time.Since(start).Round(time.Second), e.livePods(ctx, t), loadAverage())

	res := wlResults{rollout: map[wlVariant][]rolloutRun{}}
	t.Cleanup(func() { res.report(t, n) })
	nextFloor := 0
	for round := range rounds {
		for k := range len(arms) + 1 {
			i := (round + k) % (len(arms) + 1)
			if i == len(arms) {
				for range fs {
					r, err := e.measureFloor(ctx, floorPod, floorImgs[nextFloor])
					nextFloor++
					if err != nil {
						t.Fatalf("floor: %v", err)
					}
					res.floor = append(res.floor, r)
					t.Logf("round %d %-50s Ready %6.3f s", round, wlFloorVariant, r.ready.Seconds())
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
			res.rollout[a.v] = append(res.rollout[a.v], r)
			t.Logf("round %d %-50s done %7.3f s  last pod Ready %7.3f s", round, a.v, r.done.Seconds(), r.lastReady.Seconds())
		}
	}
}

// wlResults are the figures of one run.
type wlResults struct {
	rollout map[wlVariant][]rolloutRun
	floor   []floorRun
}

func (res wlResults) report(t *testing.T, n int) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	med := map[wlVariant]time.Duration{}
	var b strings.Builder
	fmt.Fprintf(&b, "\nspec update → status: every pod updated, ready, available (watch event received)\n\n")
	fmt.Fprintf(&b, "| variant | pods | rounds | median | min | max |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, v := range []wlVariant{wlSTSInPlace, wlSTSRecreate, wlSTSBuiltin, wlADSInPlace, wlADSStandard, wlADSBuiltin} {
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
	var single time.Duration
	if len(res.floor) > 0 {
		var rs []time.Duration
		for _, f := range res.floor {
			rs = append(rs, f.ready)
		}
		single = median(rs)
		fmt.Fprintf(&b, "| floor: one restart (image patch of a bare pod → Ready; %d samples) | 1 | | %s | %s | %s |\n",
			len(rs), sec(single), sec(slices.Min(rs)), sec(slices.Max(rs)))
	}
	ratio := func(a, b time.Duration) string {
		if a == 0 || b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", a.Seconds()/b.Seconds())
	}
	stsFloor := time.Duration(n) * single // OrderedReady: one pod at a time
	fmt.Fprintf(&b, "\nratios of medians (same run)\n\n| ratio | value |\n| --- | --- |\n")
	for _, r := range []struct {
		name string
		a, b time.Duration
	}{
		{"built-in StatefulSet / Advanced StatefulSet in place", med[wlSTSBuiltin], med[wlSTSInPlace]},
		{"Advanced StatefulSet ReCreate / in place", med[wlSTSRecreate], med[wlSTSInPlace]},
		{fmt.Sprintf("Advanced StatefulSet in place / floor (%d × one restart)", n), med[wlSTSInPlace], stsFloor},
		{"built-in DaemonSet / Advanced DaemonSet in place", med[wlADSBuiltin], med[wlADSInPlace]},
		{"Advanced DaemonSet Standard / in place", med[wlADSStandard], med[wlADSInPlace]},
		{"Advanced DaemonSet in place / floor (one restart)", med[wlADSInPlace], single},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", r.name, ratio(r.a, r.b))
	}
	t.Log(b.String())
}

// rolloutStatefulSet is an Advanced StatefulSet of the rollout pod, OrderedReady, one pod at a
// time; in place needs the InPlaceUpdateReady readiness gate in the template.
func rolloutStatefulSet(ns, name, img string, replicas int32, policy appsv1beta1.PodUpdateStrategyType) *appsv1beta1.StatefulSet {
	tmpl := rolloutTemplate(name, img)
	if policy != appsv1beta1.RecreatePodUpdateStrategyType {
		tmpl.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	}
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:    tmpl,
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
					Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1)), PodUpdatePolicy: policy,
				},
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

// rolloutDaemonSet is an Advanced DaemonSet of the rollout pod: maxUnavailable 1, maxSurge 0.
func rolloutDaemonSet(ns, name, img string, typ appsv1beta1.DaemonSetRollingUpdateType) *appsv1beta1.DaemonSet {
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template: rolloutTemplate(name, img),
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type:          appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: typ, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
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

// nameSelector watches one object by name.
func nameSelector(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

type kruiseStatefulSetWorkload struct {
	c      versioned.Interface
	ns, nm string
	n      int32
}

func (w kruiseStatefulSetWorkload) name() string { return w.nm }

func (w kruiseStatefulSetWorkload) setImage(ctx context.Context, img string) (int64, error) {
	s, err := w.c.AppsV1beta1().StatefulSets(w.ns).Patch(ctx, w.nm, types.JSONPatchType, imagePatch("/spec/template/spec", img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of Advanced StatefulSet %s: %w", w.nm, err)
	}
	return s.Generation, nil
}

func (w kruiseStatefulSetWorkload) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.AppsV1beta1().StatefulSets(w.ns).Watch(ctx, nameSelector(w.nm))
}

func (w kruiseStatefulSetWorkload) done(obj runtime.Object, gen int64) (bool, string) {
	s, ok := obj.(*appsv1beta1.StatefulSet)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	st, n := s.Status, w.n
	return st.ObservedGeneration >= gen && st.Replicas == n && st.UpdatedReplicas == n && st.ReadyReplicas == n &&
			st.AvailableReplicas == n && st.UpdatedReadyReplicas == n && st.CurrentRevision == st.UpdateRevision,
		fmt.Sprintf("generation %d, status %+v", s.Generation, st)
}

type builtinStatefulSetWorkload struct {
	c      kubernetes.Interface
	ns, nm string
	n      int32
}

func (w builtinStatefulSetWorkload) name() string { return w.nm }

func (w builtinStatefulSetWorkload) setImage(ctx context.Context, img string) (int64, error) {
	s, err := w.c.AppsV1().StatefulSets(w.ns).Patch(ctx, w.nm, types.JSONPatchType, imagePatch("/spec/template/spec", img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of StatefulSet %s: %w", w.nm, err)
	}
	return s.Generation, nil
}

func (w builtinStatefulSetWorkload) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.AppsV1().StatefulSets(w.ns).Watch(ctx, nameSelector(w.nm))
}

func (w builtinStatefulSetWorkload) done(obj runtime.Object, gen int64) (bool, string) {
	s, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	st, n := s.Status, w.n
	return st.ObservedGeneration >= gen && st.Replicas == n && st.UpdatedReplicas == n && st.ReadyReplicas == n &&
			st.AvailableReplicas == n && st.CurrentRevision == st.UpdateRevision,
		fmt.Sprintf("generation %d, status %+v", s.Generation, st)
}

type kruiseDaemonSetWorkload struct {
	c      versioned.Interface
	ns, nm string
	n      int32
}

func (w kruiseDaemonSetWorkload) name() string { return w.nm }

func (w kruiseDaemonSetWorkload) setImage(ctx context.Context, img string) (int64, error) {
	d, err := w.c.AppsV1beta1().DaemonSets(w.ns).Patch(ctx, w.nm, types.JSONPatchType, imagePatch("/spec/template/spec", img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of Advanced DaemonSet %s: %w", w.nm, err)
	}
	return d.Generation, nil
}

func (w kruiseDaemonSetWorkload) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.AppsV1beta1().DaemonSets(w.ns).Watch(ctx, nameSelector(w.nm))
}

func (w kruiseDaemonSetWorkload) done(obj runtime.Object, gen int64) (bool, string) {
	d, ok := obj.(*appsv1beta1.DaemonSet)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	st, n := d.Status, w.n
	return st.ObservedGeneration >= gen && st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n &&
			st.NumberReady == n && st.NumberAvailable == n && st.NumberUnavailable == 0,
		fmt.Sprintf("generation %d, status %+v", d.Generation, st)
}

type builtinDaemonSetWorkload struct {
	c      kubernetes.Interface
	ns, nm string
	n      int32
}

func (w builtinDaemonSetWorkload) name() string { return w.nm }

func (w builtinDaemonSetWorkload) setImage(ctx context.Context, img string) (int64, error) {
	d, err := w.c.AppsV1().DaemonSets(w.ns).Patch(ctx, w.nm, types.JSONPatchType, imagePatch("/spec/template/spec", img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of DaemonSet %s: %w", w.nm, err)
	}
	return d.Generation, nil
}

func (w builtinDaemonSetWorkload) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.AppsV1().DaemonSets(w.ns).Watch(ctx, nameSelector(w.nm))
}

func (w builtinDaemonSetWorkload) done(obj runtime.Object, gen int64) (bool, string) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	st, n := d.Status, w.n
	return st.ObservedGeneration >= gen && st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n &&
			st.NumberReady == n && st.NumberAvailable == n && st.NumberUnavailable == 0,
		fmt.Sprintf("generation %d, status %+v", d.Generation, st)
}
