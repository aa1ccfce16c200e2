//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The rollout benchmark's settings.
var (
	csReplicas       = envInt("BENCH_CLONESET_REPLICAS", 30)
	csRounds         = envInt("BENCH_CLONESET_ROUNDS", 3)
	csMaxUnavailable = envInt("BENCH_CLONESET_MAX_UNAVAILABLE", 3)
	csFloorSamples   = envInt("BENCH_CLONESET_FLOOR_SAMPLES", 3)
	// BENCH_CLONESET_OPENKRUISE=0 leaves OpenKruise's phase out (while developing).
	csOpenKruise = envStr("BENCH_CLONESET_OPENKRUISE", "1") != "0"
	// BENCH_CLONESET_TRACE=1 logs every pod and workload event of the rollouts.
	csTrace = envStr("BENCH_CLONESET_TRACE", "0") == "1"
	// BENCH_CLONESET_SHAPE: the pod rolled out, minimal or production (podShape).
	csShape = envStr("BENCH_CLONESET_SHAPE", string(shapeMinimal))
	// BENCH_CLONESET_RECREATE=0 leaves the ReCreate CloneSet's rollouts out; the CloneSet is
	// still created, so the node carries the same pods (its pods stand in for OpenKruise's
	// CloneSet in that phase, see below).
	csRecreateRollouts = envStr("BENCH_CLONESET_RECREATE", "1") != "0"
)

// csVariant is one way of rolling out the same image change.
type csVariant string

const (
	csInPlace  csVariant = "kruise CloneSet, InPlaceIfPossible"
	csRecreate csVariant = "kruise CloneSet, ReCreate"
	csDeploy   csVariant = "Deployment, RollingUpdate, maxSurge 0"
	csOK       csVariant = "OpenKruise v1.9.0 CloneSet, InPlaceIfPossible"
	csFloor    csVariant = "floor" // not a rollout: F single-pod restarts
)

// The phases: kruise's controller leads in the first, OpenKruise's acts in the second.
const (
	phaseKruise = "kruise phase"
	phaseOK     = "OpenKruise phase"
)

// csResults are the figures of one run.
type csResults struct {
	shape   podShape
	n, m    int
	rollout map[csVariant][]rolloutRun
	floor   map[string][]floorRun // per phase
	// floorBatches: per phase, the runs of each batch of M floor pods patched at once.
	floorBatches map[string][][]floorRun
}

// TestCloneSetRollout measures, in one run, the time from a template image change to the
// workload's status showing every pod updated, ready and available, for N pods and
// maxUnavailable M: kruise's CloneSet in place and by recreation, a Deployment, and OpenKruise
// v1.9.0's CloneSet in place; and the floor, one container's restart by a direct image patch of
// a bare pod (the kubelet alone), times ceil(N/M), beside M such restarts at once times ceil(N/M).
// Variants take turns within each phase.
func TestCloneSetRollout(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-cs", "bench-cloneset")
	n, m, rounds, fs := csReplicas, csMaxUnavailable, csRounds, csFloorSamples
	shape, err := parsePodShape(csShape)
	if err != nil {
		t.Fatalf("BENCH_CLONESET_SHAPE: %v", err)
	}
	t.Logf("%s pod, %d pods, maxUnavailable %d, %d rounds, %d floor samples per round and phase", shape, n, m, rounds, fs)
	var build openKruiseBuild
	if csOpenKruise {
		if build, err = buildOpenKruise(ctx, t.Logf); err != nil {
			t.Fatal(err)
		}
	}
	// Per round and phase: fs single floor samples and one batch of M.
	imgs := e.rolloutImages(ctx, t, rounds+2*rounds*(fs+1))
	targets, floorImgs := imgs[:rounds], imgs[rounds:]

	start := time.Now()
	kc := e.kruise.AppsV1alpha1()
	inPlace := cloneSetWorkload(e.kruise, e.ns, "inplace", int32(n))
	recreate := cloneSetWorkload(e.kruise, e.ns, "recreate", int32(n))
	deploy := deploymentWorkload(e.client, e.ns, "deploy", int32(n))
	for _, cs := range []*appsv1alpha1.CloneSet{
		rolloutCloneSet(e.ns, inPlace.name(), shape, image, int32(n), int32(m), appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType),
		rolloutCloneSet(e.ns, recreate.name(), shape, image, int32(n), int32(m), appsv1alpha1.RecreateCloneSetUpdateStrategyType),
	} {
		if _, err := kc.CloneSets(e.ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CloneSet %s: %v", cs.Name, err)
		}
	}
	if _, err := e.client.AppsV1().Deployments(e.ns).Create(ctx, rolloutDeployment(e.ns, deploy.name(), shape, image, int32(n), int32(m)), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Deployment: %v", err)
	}
	floors, err := e.createFloorPods(ctx, "floor", fs, shape, image)
	if err != nil {
		t.Fatal(err)
	}
	// Pods of their own, so that no batch restarts a pod a single sample restarted moments before.
	batch, err := e.createFloorPods(ctx, "floor-batch", m, shape, image)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []workload{inPlace, recreate, deploy} {
		if _, _, err := e.settledPods(ctx, e.ns, w.name(), n); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("workloads of %d pods each Ready: %s; load average %s", n, time.Since(start).Round(time.Second), loadAverage())

	res := csResults{shape: shape, n: n, m: m, rollout: map[csVariant][]rolloutRun{}, floor: map[string][]floorRun{}, floorBatches: map[string][][]floorRun{}}
	// The tables, also when a later phase fails: what was measured is reported.
	t.Cleanup(func() { res.report(t) })
	nextFloor := 0
	measure := func(phase string, v csVariant, ns string, w workload, round int) {
		t.Helper()
		if v == csFloor {
			for sample := range fs {
				img := floorImgs[nextFloor]
				nextFloor++
				r, err := e.measureFloor(ctx, floors.pod(sample), img)
				if err != nil {
					t.Fatalf("%s, floor: %v", phase, err)
				}
				res.floor[phase] = append(res.floor[phase], r)
				t.Logf("round %d %-48s unready %6.3f s  Ready %6.3f s", round, phase+" floor (image patch of one pod)", r.unready.Seconds(), r.ready.Seconds())
			}
			rs, err := e.measureFloorBatch(ctx, batch, floorImgs[nextFloor])
			nextFloor++
			if err != nil {
				t.Fatalf("%s, floor of %d at once: %v", phase, m, err)
			}
			res.floorBatches[phase] = append(res.floorBatches[phase], rs)
			t.Logf("round %d %-48s Ready %6.3f s", round, fmt.Sprintf("%s floor (image patch of %d pods at once)", phase, m), batchReady(rs).Seconds())
			return
		}
		var trace func(string, ...any)
		if csTrace {
			trace = func(f string, a ...any) { t.Logf("  trace %s: "+f, append([]any{v}, a...)...) }
		}
		r, err := e.measureRollout(ctx, ns, w, n, targets[round], trace)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		wantKept := 0
		if v == csInPlace || v == csOK {
			wantKept = n
		}
		if r.kept != wantKept {
			t.Errorf("%s: %d of %d pods kept their UID, want %d", v, r.kept, n, wantKept)
		}
		res.rollout[v] = append(res.rollout[v], r)
		t.Logf("round %d %-48s done %7.3f s  last pod Ready %7.3f s  %s", round, v, r.done.Seconds(), r.lastReady.Seconds(), res.breakdown(r))
	}
	type turn struct {
		v csVariant
		w workload
	}
	turns := func(phase, ns string, ts []turn) {
		for i := range rounds {
			for k := range ts {
				x := ts[(i+k)%len(ts)]
				measure(phase, x.v, ns, x.w, i)
			}
		}
	}

	t.Logf("%s: %d live pods on the node", phaseKruise, e.livePods(ctx, t))
	start = time.Now()
	kruiseTurns := []turn{{csInPlace, inPlace}, {csRecreate, recreate}, {csDeploy, deploy}, {csFloor, nil}}
	if !csRecreateRollouts {
		kruiseTurns = slices.DeleteFunc(kruiseTurns, func(x turn) bool { return x.v == csRecreate })
	}
	turns(phaseKruise, e.ns, kruiseTurns)
	t.Logf("%s: %s; load average %s", phaseKruise, time.Since(start).Round(time.Second), loadAverage())
	if !csOpenKruise {
		return
	}

	// OpenKruise's controller sees every CloneSet of the cluster: kruise's go first. The node
	// carries the same load in both phases: the Deployment's pods stay, and the ReCreate
	// CloneSet's are orphaned (left running, ownerless) to stand in for OpenKruise's CloneSet
	// against kruise's in-place one.
	start = time.Now()
	if err := kc.CloneSets(e.ns).Delete(ctx, inPlace.name(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.waitPodsGone(ctx, e.ns, inPlace.name()); err != nil {
		t.Fatal(err)
	}
	if err := e.orphanPods(ctx, e.ns, recreate, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("kruise's CloneSets gone or orphaned: %s", time.Since(start).Round(time.Second))
	e.openKruisePhase(ctx, t, build, []string{"cloneset-controller"},
		func(ns string) []workload { return []workload{cloneSetWorkload(e.kruise, ns, "okinplace", int32(n))} },
		func(ns string, ws []workload) {
			okCS := ws[0]
			start := time.Now()
			if _, err := kc.CloneSets(ns).Create(ctx, rolloutCloneSet(ns, okCS.name(), shape, image, int32(n), int32(m),
				appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType), metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating OpenKruise's CloneSet: %v", err)
			}
			pods, _, err := e.settledPods(ctx, ns, okCS.name(), n)
			if err != nil {
				t.Fatal(err)
			}
			if !hasReadinessGate(&pods[0], pub.InPlaceUpdateReady) {
				t.Fatalf("pod %s of OpenKruise's CloneSet lacks the %s readiness gate: not created by its controller?", pods[0].Name, pub.InPlaceUpdateReady)
			}
			t.Logf("OpenKruise's CloneSet of %d pods Ready: %s", n, time.Since(start).Round(time.Second))

			t.Logf("%s: %d live pods on the node", phaseOK, e.livePods(ctx, t))
			start = time.Now()
			turns(phaseOK, ns, []turn{{csOK, okCS}, {csFloor, nil}})
			t.Logf("%s: %s; load average %s", phaseOK, time.Since(start).Round(time.Second), loadAverage())
		})
}

// livePods counts the cluster's pods not being deleted (the local cluster has one node).
func (e *env) livePods(ctx context.Context, t *testing.T) int {
	l, err := e.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	n := 0
	for i := range l.Items {
		if l.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// orphanPods deletes w, leaving its n pods (labelled app=name in ns) running without an owner,
// and waits until they are so and w is gone.
func (e *env) orphanPods(ctx context.Context, ns string, w workload, n int) error {
	if err := w.orphan(ctx); err != nil {
		return fmt.Errorf("deleting %s, orphaning its pods: %w", w.name(), err)
	}
	_, err := framework.Poll(ctx, cloneSetRolloutTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + w.name()})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		orphans := 0
		for i := range l.Items {
			if p := &l.Items[i]; len(p.OwnerReferences) == 0 && p.DeletionTimestamp == nil {
				orphans++
			}
		}
		if orphans != n {
			return false, fmt.Sprintf("%d of %d pods orphaned", orphans, len(l.Items)), nil
		}
		// The garbage collector removes the workload's orphan finalizer after its pods.
		err = w.exists(ctx)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return false, "pods orphaned, the workload still there (orphan finalizer)", nil
	})
	if err != nil {
		return fmt.Errorf("pods of %s/%s orphaned: %w", ns, w.name(), err)
	}
	return nil
}

// waitPodsGone waits until no pod labelled app=name is left in ns.
func (e *env) waitPodsGone(ctx context.Context, ns, name string) error {
	_, err := framework.Poll(ctx, cloneSetRolloutTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + name})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods left", len(l.Items)), nil
	})
	if err != nil {
		return fmt.Errorf("pods of %s/%s going: %w", ns, name, err)
	}
	return nil
}

func hasReadinessGate(p *corev1.Pod, c corev1.PodConditionType) bool {
	for _, g := range p.Spec.ReadinessGates {
		if g.ConditionType == c {
			return true
		}
	}
	return false
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, for the log: the benchmark
// wants a quiet machine, and the lock it runs under keeps other tests off the cluster, not
// other work off the CPUs.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
