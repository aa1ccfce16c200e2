package podbudget

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// Replicas reads a workload's spec.replicas in namespace: 0 (found) when the workload is gone or
// being deleted, so that a workload's own clean-up (the garbage collector deleting its pods) is
// never held by a budget (as OpenKruise); found is false when the reader knows no replica count
// for it (its pods are counted instead).
type Replicas interface {
	Replicas(ctx context.Context, namespace string, w Workload) (n int32, found bool, err error)
}

// Observe gathers what ComputeStatus needs of budget b, whose covered pods are pods, at the
// caller's time (set Now on the result):
//   - targetRef: the target's replicas (0 once it is gone or being deleted); a target whose
//     replicas cannot be read counts its covered pods that are neither being deleted nor finished;
//   - selector: the sum of the replicas of the distinct workloads of the pods (WorkloadOf);
//     a pod without a controller counts 1 unless it is being deleted or has finished, and a
//     workload whose replicas are unknown counts its pods;
//   - pub.kruise.io/protect-total-replicas, when set, is the total (not per workload).
func Observe(ctx context.Context, owners Owners, replicas Replicas, b *policyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod) (Observation, error) {
	obs := Observation{Pods: pods}
	if t := b.Spec.TargetReference; b.Spec.Selector == nil && t != nil {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		if err != nil {
			return Observation{}, fmt.Errorf("targetRef.apiVersion %q: %w", t.APIVersion, err)
		}
		n, found, err := replicas.Replicas(ctx, b.Namespace, Workload{APIVersion: gv.String(), Kind: t.Kind, Name: t.Name})
		if err != nil {
			return Observation{}, err
		}
		if !found {
			n = activePods(pods)
		}
		obs.Total = n
	} else {
		obs.WorkloadOf = make(map[string]Workload, len(pods))
		obs.WorkloadTotals = map[Workload]int32{}
		podsOf := map[Workload]int32{}
		for _, p := range pods {
			w, err := WorkloadOf(ctx, owners, p)
			if err != nil {
				return Observation{}, err
			}
			obs.WorkloadOf[p.Name] = w
			if w.Bare() {
				obs.WorkloadTotals[w] = activePods([]*corev1.Pod{p})
				continue
			}
			podsOf[w]++
		}
		for w, count := range podsOf {
			n, found, err := replicas.Replicas(ctx, b.Namespace, w)
			if err != nil {
				return Observation{}, err
			}
			if !found {
				n = count
			}
			obs.WorkloadTotals[w] = n
		}
		for _, n := range obs.WorkloadTotals {
			obs.Total += n
		}
	}
	if n, ok := TotalOverride(b); ok {
		obs.Total = n
	}
	return obs, nil
}

// activePods counts the pods neither being deleted nor finished.
func activePods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}
