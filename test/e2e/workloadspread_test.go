//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// OpenKruise's documented WorkloadSpread examples, each on a CloneSet and on a Deployment, through
// scale up, a rolling update with a surge pod and scale down, on simulated nodes.

// Three zones at 34%, 33% and 33% of the replicas (rounded up), filled in order: 6 pods spread
// 3/2/1, 9 pods 4/3/2, the spread kept through a rolling update (surge pods included), and a
// scale-in to 3 leaves 2/1/0 (the deletion costs send the over-full and later zones' pods first).
func TestWorkloadSpreadZones(t *testing.T) {
	t.Parallel()
	for _, kind := range spreadKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 12*time.Minute)
			ns := f.NewNamespace(ctx, t, "ws-zones")
			key := corev1.LabelTopologyZone
			subsets := []spreadSubset{
				{name: "zone-a", value: ns + "-a", max: ptr.To(intstr.FromString("34%"))},
				{name: "zone-b", value: ns + "-b", max: ptr.To(intstr.FromString("33%"))},
				{name: "zone-c", value: ns + "-c", max: ptr.To(intstr.FromString("33%"))},
			}
			for _, s := range subsets {
				f.SimNodes(ctx, t, s.name, 1, map[string]string{key: s.value})
			}
			w := newSpreadWorkload(ctx, t, f, kc, kind, ns, "web", 0)
			newWorkloadSpread(ctx, t, kc, w, "zones", key, subsets, appsv1alpha1.WorkloadSpreadScheduleStrategy{})
			deleteWorkloadSpreadAtEnd(t, kc, ns, "zones")
			waitInjected(ctx, t, f, w, "zones")

			w.scale(ctx, t, 6)
			waitSpread(ctx, t, f, kc, w, "zones", key, subsets, fill(t, subsets, 6), 6)
			w.scale(ctx, t, 9)
			waitSpread(ctx, t, f, kc, w, "zones", key, subsets, fill(t, subsets, 9), 9)
			w.rollout(ctx, t, "2")
			waitSpread(ctx, t, f, kc, w, "zones", key, subsets, fill(t, subsets, 9), 9)
			waitCostsKeep(ctx, t, f, kc, w, "zones", key, 3, fill(t, subsets, 3))
			w.scale(ctx, t, 3)
			waitSpread(ctx, t, f, kc, w, "zones", key, subsets, fill(t, subsets, 3), 3)
		})
	}
}

// "At most 2 on ordinary nodes, the rest on spot": the ordinary pool's subset has maxReplicas 2,
// the spot pool's none. 5 pods are 2 + 3, 7 are 2 + 5 through a rolling update, and scale-in
// removes spot pods first: 3 are 2 + 1, 1 is 1 + 0.
func TestWorkloadSpreadSpotOverflow(t *testing.T) {
	t.Parallel()
	for _, kind := range spreadKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 12*time.Minute)
			ns := f.NewNamespace(ctx, t, "ws-spot")
			subsets := []spreadSubset{
				{name: "ordinary", value: ns + "-ordinary", max: ptr.To(intstr.FromInt32(2))},
				{name: "spot", value: ns + "-spot"},
			}
			f.SimNodes(ctx, t, "ordinary", 1, map[string]string{wsPoolLabel: subsets[0].value})
			f.SimNodes(ctx, t, "spot", 2, map[string]string{wsPoolLabel: subsets[1].value})
			w := newSpreadWorkload(ctx, t, f, kc, kind, ns, "web", 0)
			newWorkloadSpread(ctx, t, kc, w, "spot", wsPoolLabel, subsets, appsv1alpha1.WorkloadSpreadScheduleStrategy{})
			deleteWorkloadSpreadAtEnd(t, kc, ns, "spot")
			waitInjected(ctx, t, f, w, "spot")

			w.scale(ctx, t, 5)
			waitSpread(ctx, t, f, kc, w, "spot", wsPoolLabel, subsets, map[string]int{"ordinary": 2, "spot": 3}, 5)
			w.scale(ctx, t, 7)
			waitSpread(ctx, t, f, kc, w, "spot", wsPoolLabel, subsets, map[string]int{"ordinary": 2, "spot": 5}, 7)
			w.rollout(ctx, t, "2")
			waitSpread(ctx, t, f, kc, w, "spot", wsPoolLabel, subsets, map[string]int{"ordinary": 2, "spot": 5}, 7)
			waitCostsOrdered(ctx, t, f, kc, w, "spot", wsPoolLabel, subsets)
			w.scale(ctx, t, 3)
			waitSpread(ctx, t, f, kc, w, "spot", wsPoolLabel, subsets, map[string]int{"ordinary": 2, "spot": 1}, 3)
			w.scale(ctx, t, 1)
			waitSpread(ctx, t, f, kc, w, "spot", wsPoolLabel, subsets, map[string]int{"ordinary": 1}, 1)
		})
	}
}

// The elastic pool (scheduleStrategy Adaptive): the reserved pool's subset has no maxReplicas but
// its one node takes only 2 pods. Of 5 pods, those the reserved subset cannot place stay Pending
// (Unschedulable) past rescheduleCriticalSeconds; kruise deletes them, marks the subset
// unschedulable, and their replacements go to the elastic pool: 2 + 3. Scale up and the rolling
// update keep every pod in a pool that has room; scale-in removes elastic pods first.
func TestWorkloadSpreadAdaptive(t *testing.T) {
	t.Parallel()
	for _, kind := range spreadKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 12*time.Minute)
			ns := f.NewNamespace(ctx, t, "ws-adaptive")
			subsets := []spreadSubset{
				{name: "reserved", value: ns + "-reserved"},
				{name: "elastic", value: ns + "-elastic"},
			}
			f.SimNodesWithCapacity(ctx, t, "reserved", 1, map[string]string{wsPoolLabel: subsets[0].value}, 2)
			f.SimNodes(ctx, t, "elastic", 2, map[string]string{wsPoolLabel: subsets[1].value})
			w := newSpreadWorkload(ctx, t, f, kc, kind, ns, "web", 0)
			newWorkloadSpread(ctx, t, kc, w, "elastic", wsPoolLabel, subsets, appsv1alpha1.WorkloadSpreadScheduleStrategy{
				Type:     appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
				Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptr.To[int32](10)},
			})
			deleteWorkloadSpreadAtEnd(t, kc, ns, "elastic")
			waitInjected(ctx, t, f, w, "elastic")

			w.scale(ctx, t, 5)
			stuck := watchStuckInReserved(ctx, t, f, w)
			v := waitSpread(ctx, t, f, kc, w, "elastic", wsPoolLabel, subsets, map[string]int{"reserved": 2, "elastic": 3}, 5)
			names := stuck()
			if len(names) < 3 {
				t.Fatalf("saw %d pods of subset reserved Pending Unschedulable (%v), want at least 3 rescheduled", len(names), names)
			}
			for _, p := range v.pods {
				if _, ok := names[p.Name]; ok {
					t.Fatalf("pod %s was Pending Unschedulable in subset reserved and is still there: %s", p.Name, v.describe())
				}
			}
			if c := subsetCondition(v.ws, "reserved"); c == nil || c.Status != corev1.ConditionFalse {
				t.Errorf("subset reserved condition %s: %+v, want False after rescheduling", appsv1alpha1.SubsetSchedulable, c)
			}

			w.scale(ctx, t, 6)
			v = waitAdaptive(ctx, t, f, kc, w, subsets, 6)
			w.rollout(ctx, t, "2")
			v = waitAdaptive(ctx, t, f, kc, w, subsets, 6)
			reserved := v.bySubset["reserved"]
			w.scale(ctx, t, 2)
			waitSpread(ctx, t, f, kc, w, "elastic", wsPoolLabel, subsets, map[string]int{"reserved": min(reserved, 2), "elastic": 2 - min(reserved, 2)}, 2)
		})
	}
}

// watchStuckInReserved records, until the returned function is called, the pods of subset
// "reserved" seen Pending with PodScheduled False (Unschedulable), with their condition.
func watchStuckInReserved(ctx context.Context, t *testing.T, f *framework.Framework, w *spreadWorkload) func() map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	seen := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = framework.Poll(ctx, wsTimeout, func(ctx context.Context) (bool, string, error) {
			pods, err := w.pods(ctx)
			if err != nil {
				return false, "", framework.Retry(err)
			}
			for i := range pods {
				p := &pods[i]
				m, err := matchedSubset(p)
				if err != nil || m == nil || m.Subset != "reserved" || p.Status.Phase != corev1.PodPending {
					continue
				}
				if c := framework.PodConditionOf(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					seen[p.Name] = c.Message
				}
			}
			return false, fmt.Sprintf("%d stuck", len(seen)), nil
		})
	}()
	return func() map[string]string {
		cancel()
		<-done
		return seen
	}
}

func subsetCondition(ws *appsv1alpha1.WorkloadSpread, subset string) *appsv1alpha1.WorkloadSpreadSubsetCondition {
	for i := range ws.Status.SubsetStatuses {
		s := &ws.Status.SubsetStatuses[i]
		if s.Name != subset {
			continue
		}
		for j := range s.Conditions {
			if s.Conditions[j].Type == appsv1alpha1.SubsetSchedulable {
				return &s.Conditions[j]
			}
		}
	}
	return nil
}

// waitAdaptive waits until the workload has total pods Running and Ready, each annotated with a
// subset and on a node of that subset's pool, at most 2 in the reserved pool: where the reserved
// subset's pods go after scaling or an update depends on when kruise finds it schedulable
// again, which the test does not fix.
func waitAdaptive(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, w *spreadWorkload,
	subsets []spreadSubset, total int32) *spreadView {
	t.Helper()
	var last *spreadView
	framework.WaitFor(ctx, t, wsTimeout, fmt.Sprintf("%s %s: %d pods in the pools", w.kind, w.name, total), func(ctx context.Context) (bool, string, error) {
		ok, seen, err := w.settled(ctx, total)
		if err != nil || !ok {
			return false, seen, err
		}
		v, err := observeSpread(ctx, f, kc, w, "elastic", wsPoolLabel)
		if err != nil {
			return false, "", err
		}
		last = v
		want := map[string]int{"reserved": v.bySubset["reserved"], "elastic": int(total) - v.bySubset["reserved"]}
		if why := spreadWrong(v, "elastic", subsets, want, total); why != "" {
			return false, why + "; " + v.describe(), nil
		}
		if want["reserved"] > 2 {
			return false, "", fmt.Errorf("%d pods Ready in the reserved pool, whose node takes 2: %s", want["reserved"], v.describe())
		}
		return true, v.describe(), nil
	})
	return last
}
