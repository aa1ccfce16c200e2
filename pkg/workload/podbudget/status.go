package podbudget

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

const (
	// DeletionTimeout is how long a deletion or eviction a budget allowed stays charged if the
	// pod is not seen deleting: then the charge is dropped, with Event ReasonNotDeleted.
	DeletionTimeout = 20 * time.Second
	// UpdateGrace is how long an allowed update stays charged while the pod still looks
	// available: the update has not reached the cache yet. After it, the charge lasts until the
	// pod is available again.
	UpdateGrace = 10 * time.Second
	// MaxRecorded bounds the pods a budget's status records; Admit refuses beyond it.
	MaxRecorded = 2000
	// MaxWorkloads is the CRD's bound on status.workloads.
	MaxWorkloads = 1000
	// ReasonNotDeleted is the Event on a budget whose allowed deletion did not happen in time.
	ReasonNotDeleted = "NotDeleted"
)

// Observation is what the controller saw of a budget's pods and workloads.
type Observation struct {
	// Pods are the pods the budget covers (Covers), deleting ones included.
	Pods []*corev1.Pod
	// Total is the replicas counted (Totals).
	Total int32
	// Workloads, for a budget per workload, have each pod's workload (by pod name) and each
	// workload's replicas.
	WorkloadOf     map[string]Workload
	WorkloadTotals map[Workload]int32
	// Now is the time of the observation.
	Now time.Time
}

// Result is a budget's status computed from an Observation.
type Result struct {
	Status policyv1alpha1.PodUnavailableBudgetStatus
	// NotDeleted are the pods whose allowed deletion timed out (sorted), for Events.
	NotDeleted []string
	// RecheckAfter, when positive, is when a recorded pod's charge next expires.
	RecheckAfter time.Duration
}

// ComputeStatus is the status of budget b given what was observed: the recorded pods pruned,
// then per workload (or for all pods together) desired = DesiredAvailable(total), current = the
// available pods not recorded, allowed = max(0, current − desired). observedGeneration is b's.
func ComputeStatus(b *policyv1alpha1.PodUnavailableBudget, obs Observation) (Result, error) {
	protectUnready := ProtectsUnready(b)
	pods := make(map[string]*corev1.Pod, len(obs.Pods))
	for _, p := range obs.Pods {
		pods[p.Name] = p
	}
	var res Result
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	disrupted := map[string]metav1.Time{}
	for name, at := range b.Status.DisruptedPods {
		p := pods[name]
		switch {
		case p == nil || p.DeletionTimestamp != nil || p.CreationTimestamp.After(at.Time):
			// Gone, going, or a new pod of the same name: the charge is spent.
		case !obs.Now.Before(at.Add(DeletionTimeout)):
			res.NotDeleted = append(res.NotDeleted, name)
		default:
			disrupted[name] = at
			earliest(at.Add(DeletionTimeout))
		}
	}
	sort.Strings(res.NotDeleted)
	unavailable := map[string]metav1.Time{}
	for name, at := range b.Status.UnavailablePods {
		p := pods[name]
		switch {
		case p == nil || p.DeletionTimestamp != nil || p.CreationTimestamp.After(at.Time):
		case obs.Now.Before(at.Add(UpdateGrace)):
			unavailable[name] = at
			earliest(at.Add(UpdateGrace))
		case !Available(p, protectUnready):
			// Still updating; a change of the pod brings it back here.
			unavailable[name] = at
		}
	}

	st := policyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: b.Generation,
		DisruptedPods:      nilIfEmpty(disrupted),
		UnavailablePods:    nilIfEmpty(unavailable),
	}
	if !PerWorkload(b) {
		n, err := numbers(b, obs.Pods, obs.Total, disrupted, unavailable, protectUnready)
		if err != nil {
			return Result{}, err
		}
		st.TotalReplicas, st.DesiredAvailable, st.CurrentAvailable, st.UnavailableAllowed = n.TotalReplicas, n.DesiredAvailable, n.CurrentAvailable, n.UnavailableAllowed
	} else {
		groups := map[Workload][]*corev1.Pod{}
		for w := range obs.WorkloadTotals {
			groups[w] = nil
		}
		for _, p := range obs.Pods {
			w, ok := obs.WorkloadOf[p.Name]
			if !ok {
				return Result{}, fmt.Errorf("no workload observed for pod %s", p.Name)
			}
			groups[w] = append(groups[w], p)
		}
		for w, ps := range groups {
			total, ok := obs.WorkloadTotals[w]
			if !ok {
				total = int32(len(ps))
			}
			n, err := numbers(b, ps, total, disrupted, unavailable, protectUnready)
			if err != nil {
				return Result{}, err
			}
			n.Kind, n.Name = w.Kind, w.Name
			st.Workloads = append(st.Workloads, n)
			st.TotalReplicas += n.TotalReplicas
			st.DesiredAvailable += n.DesiredAvailable
			st.CurrentAvailable += n.CurrentAvailable
			st.UnavailableAllowed += n.UnavailableAllowed
		}
		sort.Slice(st.Workloads, func(i, j int) bool {
			a, c := st.Workloads[i], st.Workloads[j]
			return a.Kind < c.Kind || (a.Kind == c.Kind && a.Name < c.Name)
		})
		if len(st.Workloads) > MaxWorkloads {
			// The sums stay right; a workload beyond the bound has no entry, and Admit refuses
			// its pods (it cannot charge them).
			st.Workloads = st.Workloads[:MaxWorkloads]
		}
	}
	res.Status = st
	if !next.IsZero() {
		res.RecheckAfter = max(next.Sub(obs.Now), time.Millisecond)
	}
	return res, nil
}

// numbers are one group of pods' numbers.
func numbers(b *policyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod, total int32,
	disrupted, unavailable map[string]metav1.Time, protectUnready bool) (policyv1alpha1.WorkloadBudget, error) {
	desired, err := DesiredAvailable(b, total)
	if err != nil {
		return policyv1alpha1.WorkloadBudget{}, err
	}
	var current int32
	for _, p := range pods {
		if _, ok := disrupted[p.Name]; ok {
			continue
		}
		if _, ok := unavailable[p.Name]; ok {
			continue
		}
		if Available(p, protectUnready) {
			current++
		}
	}
	return policyv1alpha1.WorkloadBudget{
		TotalReplicas: total, DesiredAvailable: desired, CurrentAvailable: current,
		UnavailableAllowed: max(0, current-desired),
	}, nil
}

func nilIfEmpty(m map[string]metav1.Time) map[string]metav1.Time {
	if len(m) == 0 {
		return nil
	}
	return m
}
