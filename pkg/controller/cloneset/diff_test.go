package cloneset

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// pods builds n pods with the given facts.
func pods(n int, f PodFacts) []PodFacts {
	out := make([]PodFacts, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func join(groups ...[]PodFacts) []PodFacts {
	var out []PodFacts
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var (
	oldReady      = PodFacts{Available: true}
	oldRecreate   = PodFacts{Available: true, Recreate: true}
	newReady      = PodFacts{Updated: true, Available: true}
	newUnready    = PodFacts{Updated: true}
	oldUnready    = PodFacts{}
	oldToDelete   = PodFacts{Available: true, SpecifiedDelete: true}
	newPreDeleted = PodFacts{Updated: true, PreparingDelete: true}
	newRecreate   = PodFacts{Updated: true, Available: true, Recreate: true}
)

func TestCalculate(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Budget
		pods []PodFacts
		want Diff
	}{{
		name: "nothing to do",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: pods(3, newReady),
	}, {
		name: "scale out from zero, all at the update revision",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		want: Diff{ScaleUp: 3, ScaleUpLimit: 3},
	}, {
		name: "scale out with a partition creates the partition's pods at the current revision",
		b:    Budget{Replicas: 4, Partition: 2, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: pods(1, oldReady),
		want: Diff{ScaleUp: 3, ScaleUpOld: 1, ScaleUpLimit: 3},
	}, {
		name: "scale-out maxUnavailable counts pods already down",
		b:    Budget{Replicas: 5, MaxUnavailable: 1, ScaleMaxUnavailable: 2},
		pods: pods(1, newUnready),
		want: Diff{ScaleUp: 4, ScaleUpLimit: 1},
	}, {
		name: "scale in prefers old pods",
		b:    Budget{Replicas: 2, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(2, oldReady), pods(2, newReady)),
		want: Diff{ScaleDown: 2, ScaleDownOld: 2, DeleteReadyLimit: 3},
	}, {
		name: "an update of three old pods with maxUnavailable 1",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: pods(3, oldReady),
		want: Diff{Update: 3, UpdateMaxUnavailable: 1},
	}, {
		name: "partition keeps pods at the current revision",
		b:    Budget{Replicas: 5, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(4, oldReady), pods(1, newReady)),
		want: Diff{Update: 1, UpdateMaxUnavailable: 1},
	}, {
		name: "a raised partition never rolls updated pods back",
		b:    Budget{Replicas: 3, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: pods(3, newReady),
	}, {
		name: "CloneSetPartitionRollback: a raised partition rolls updated pods back",
		b:    Budget{Replicas: 4, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(1, oldReady), pods(3, newReady)),
		want: Diff{Rollback: 2, UpdateMaxUnavailable: 1},
	}, {
		name: "CloneSetPartitionRollback: partition 100% rolls every updated pod back",
		b:    Budget{Replicas: 3, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100, Rollback: true},
		pods: pods(3, newReady),
		want: Diff{Rollback: 3, UpdateMaxUnavailable: 1},
	}, {
		name: "CloneSetPartitionRollback: nothing to roll back when the partition is met",
		b:    Budget{Replicas: 4, Partition: 2, MaxUnavailable: 1, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(2, oldReady), pods(2, newReady)),
	}, {
		name: "CloneSetPartitionRollback: a lowered partition still updates",
		b:    Budget{Replicas: 4, Partition: 1, MaxUnavailable: 1, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(2, oldReady), pods(2, newReady)),
		want: Diff{Update: 1, UpdateMaxUnavailable: 1},
	}, {
		name: "CloneSetPartitionRollback: missing pods are created at the current revision first, nothing rolled back",
		b:    Budget{Replicas: 4, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(1, oldReady), pods(1, newReady)),
		want: Diff{ScaleUp: 2, ScaleUpOld: 2, ScaleUpLimit: 2},
	}, {
		name: "CloneSetPartitionRollback: rolling back counts pods already down",
		b:    Budget{Replicas: 4, Partition: 4, MaxUnavailable: 2, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(1, oldReady), pods(2, newReady), pods(1, newUnready)),
		want: Diff{Rollback: 3, UpdateMaxUnavailable: 2},
	}, {
		name: "CloneSetPartitionRollback: surge at the current revision for updated pods to be recreated",
		b:    Budget{Replicas: 4, Partition: 3, MaxSurge: 1, MaxUnavailable: 0, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(1, oldReady), pods(3, newRecreate)),
		want: Diff{Surge: 1, SurgeOld: 1, ScaleUp: 1, ScaleUpOld: 1, ScaleUpLimit: 1, Rollback: 2},
	}, {
		name: "CloneSetPartitionRollback: no surge for a rollback in place",
		b:    Budget{Replicas: 4, Partition: 3, MaxSurge: 1, MaxUnavailable: 1, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(1, oldReady), pods(3, newReady)),
		want: Diff{Rollback: 2, UpdateMaxUnavailable: 1},
	}, {
		name: "CloneSetPartitionRollback: the surplus pod of a finished rollback surge is a new one",
		b:    Budget{Replicas: 4, Partition: 3, MaxSurge: 1, MaxUnavailable: 0, ScaleMaxUnavailable: 100, Rollback: true},
		pods: join(pods(3, oldReady), pods(2, newRecreate)),
		want: Diff{ScaleDown: 1, DeleteReadyLimit: 1},
	}, {
		name: "surge for old pods to be recreated",
		b:    Budget{Replicas: 4, MaxSurge: 1, MaxUnavailable: 0, ScaleMaxUnavailable: 100},
		pods: pods(4, oldRecreate),
		want: Diff{Surge: 1, ScaleUp: 1, ScaleUpLimit: 1, Update: 4},
	}, {
		name: "no surge for an in-place update when pods may be unavailable (OpenKruise #2369)",
		b:    Budget{Replicas: 4, MaxSurge: 2, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: pods(4, oldReady),
		want: Diff{Update: 4, UpdateMaxUnavailable: 1},
	}, {
		name: "surge only for the old pods to be recreated among in-place ones",
		b:    Budget{Replicas: 4, MaxSurge: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(3, oldReady), pods(1, oldRecreate)),
		want: Diff{Surge: 1, ScaleUp: 1, ScaleUpLimit: 1, Update: 4, UpdateMaxUnavailable: 1},
	}, {
		name: "an in-place update with maxUnavailable 0 uses the surge as room",
		b:    Budget{Replicas: 4, MaxSurge: 1, MaxUnavailable: 0, ScaleMaxUnavailable: 100},
		pods: pods(4, oldReady),
		want: Diff{Surge: 1, ScaleUp: 1, ScaleUpLimit: 1, Update: 4},
	}, {
		name: "a pod asked to go is replaced first when deleting it would break maxUnavailable",
		b:    Budget{Replicas: 3, Partition: 3, MaxSurge: 1, MaxUnavailable: 0, ScaleMaxUnavailable: 100},
		pods: join(pods(2, oldReady), pods(1, oldToDelete)),
		want: Diff{Surge: 1, SurgeOld: 1, ScaleUp: 1, ScaleUpOld: 1, ScaleUpLimit: 1},
	}, {
		name: "a pod asked to go without surge waits for the budget",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(1, newReady), pods(1, newUnready), pods(1, oldToDelete)),
		want: Diff{DeleteReadyLimit: 0, Update: 1, UpdateMaxUnavailable: 1},
	}, {
		name: "a pod asked to go is deleted when the budget allows",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(2, newReady), pods(1, oldToDelete), pods(1, oldUnready)),
		want: Diff{DeleteReadyLimit: 1, Update: 1, UpdateMaxUnavailable: 2},
	}, {
		name: "a pod waiting on its preDelete hook counts unless excluded",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(2, newReady), pods(1, newPreDeleted)),
	}, {
		name: "a pod waiting on its preDelete hook is already going: no other pod is chosen",
		b:    Budget{Replicas: 1, MaxUnavailable: 1, ScaleMaxUnavailable: 100},
		pods: join(pods(1, newReady), pods(1, newPreDeleted)),
	}, {
		name: "a pod waiting on its preDelete hook is replaced when excluded",
		b:    Budget{Replicas: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 100, ExcludePreparingDelete: true},
		pods: join(pods(2, newReady), pods(1, newPreDeleted)),
		want: Diff{ScaleUp: 1, ScaleUpLimit: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Calculate(tc.b, tc.pods); got != tc.want {
				t.Errorf("Calculate = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	for _, tc := range []struct {
		name    string
		s       Strategy
		want    Budget
		wantErr bool
	}{
		{name: "defaults", s: Strategy{Replicas: 10}, want: Budget{Replicas: 10, MaxUnavailable: 2, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "partition rounds up", s: Strategy{Replicas: 3, Partition: pct("50%")}, want: Budget{Replicas: 3, Partition: 2, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "partition below 100% keeps replicas-1 (OpenKruise's rule)", s: Strategy{Replicas: 4, Partition: pct("99%")}, want: Budget{Replicas: 4, Partition: 3, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "partition 100% keeps all", s: Strategy{Replicas: 4, Partition: pct("100%")}, want: Budget{Replicas: 4, Partition: 4, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "partition 0% keeps none", s: Strategy{Replicas: 4, Partition: pct("0%")}, want: Budget{Replicas: 4, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "partition above replicas is replicas", s: Strategy{Replicas: 2, Partition: num(5)}, want: Budget{Replicas: 2, Partition: 2, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "maxUnavailable rounds down with a surge", s: Strategy{Replicas: 4, MaxSurge: pct("10%")}, want: Budget{Replicas: 4, MaxSurge: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "paused means no surge", s: Strategy{Replicas: 4, MaxSurge: num(2), Paused: true}, want: Budget{Replicas: 4, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "both zero: one may be unavailable", s: Strategy{Replicas: 4, MaxUnavailable: num(0)}, want: Budget{Replicas: 4, MaxUnavailable: 1, ScaleMaxUnavailable: 1<<31 - 1}},
		{name: "a number in a string is refused (OpenKruise #2111)", s: Strategy{Replicas: 4, MaxUnavailable: pct("5")}, wantErr: true},
		{name: "negative is refused", s: Strategy{Replicas: 4, Partition: num(-1)}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.s)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Resolve error %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("Resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// rollout plays Calculate's decisions out on a model of a CloneSet until every pod is updated,
// checking after every action that the budget holds: never more pods than replicas+maxSurge,
// never fewer available than replicas-maxUnavailable (pods taken down by the rollout itself).
type rollout struct {
	t        *testing.T
	b        Budget
	pods     []PodFacts
	created  int
	deleted  int
	inPlace  int
	maxTotal int
}

func (r *rollout) available() int {
	n := 0
	for _, p := range r.pods {
		if p.Available && !p.PreparingDelete {
			n++
		}
	}
	return n
}

func (r *rollout) check(step int, what string) {
	r.t.Helper()
	if len(r.pods) > r.b.Replicas+r.b.MaxSurge {
		r.t.Fatalf("step %d (%s): %d pods, more than replicas %d + maxSurge %d", step, what, len(r.pods), r.b.Replicas, r.b.MaxSurge)
	}
	if a := r.available(); a < r.b.Replicas-r.b.MaxUnavailable {
		r.t.Fatalf("step %d (%s): %d available, fewer than replicas %d - maxUnavailable %d", step, what, a, r.b.Replicas, r.b.MaxUnavailable)
	}
}

// step applies one reconcile and reports whether it did anything.
func (r *rollout) step(i int) bool {
	d := Calculate(r.b, r.pods)
	if d.ScaleUp > 0 && d.ScaleUpLimit > 0 {
		for k := 0; k < min(d.ScaleUp, d.ScaleUpLimit); k++ {
			r.pods = append(r.pods, PodFacts{Updated: k >= d.ScaleUpOld})
			r.created++
		}
		r.check(i, "create")
		return true
	}
	// Deletions are ChooseDeletes' own, the newest pods first among equals.
	cands := make([]Candidate, len(r.pods))
	index := map[*corev1.Pod]int{}
	for k, p := range r.pods {
		cands[k] = Candidate{Pod: gen.Pod(fmt.Sprintf("pod-%d", k)), Facts: p}
		index[cands[k].Pod] = k
	}
	newestFirst := func(pods []*corev1.Pod) []*corev1.Pod {
		out := slices.Clone(pods)
		slices.SortStableFunc(out, func(a, b *corev1.Pod) int { return index[b] - index[a] })
		return out
	}
	doomed := map[int]bool{}
	for _, p := range ChooseDeletes(d, cands, newestFirst) {
		doomed[index[p]] = true
	}
	deleted := len(doomed) > 0
	var kept []PodFacts
	for k, p := range r.pods {
		if !doomed[k] {
			kept = append(kept, p)
		}
	}
	r.pods = kept
	r.deleted += len(doomed)
	if deleted {
		r.check(i, "delete")
		return true
	}
	updated := false
	for k := range r.pods {
		if d.Update == 0 {
			break
		}
		p := &r.pods[k]
		if p.Updated || p.SpecifiedDelete || r.unavailable() >= d.UpdateMaxUnavailable {
			continue
		}
		if p.Recreate {
			p.SpecifiedDelete = true
		} else {
			p.Updated, p.Available = true, false
			r.inPlace++
		}
		d.Update--
		updated = true
	}
	if updated {
		r.check(i, "update")
	}
	return updated
}

func (r *rollout) unavailable() int { return len(r.pods) - r.available() }

// settle makes every pod available, as time passes.
func (r *rollout) settle() {
	for k := range r.pods {
		r.pods[k].Available = true
	}
}

func (r *rollout) done() bool {
	if len(r.pods) != r.b.Replicas {
		return false
	}
	for _, p := range r.pods {
		if !p.Updated || !p.Available || p.SpecifiedDelete {
			return false
		}
	}
	return true
}

func TestRolloutKeepsBudgetAndConverges(t *testing.T) {
	for _, tc := range []struct {
		replicas, surge, unavailable int
		recreate                     bool
		// wantCreated is how many pods the rollout creates (and deletes).
		wantCreated int
	}{
		{replicas: 5, surge: 0, unavailable: 1, recreate: false, wantCreated: 0},
		{replicas: 5, surge: 2, unavailable: 1, recreate: false, wantCreated: 0},
		{replicas: 5, surge: 1, unavailable: 0, recreate: false, wantCreated: 1},
		{replicas: 5, surge: 0, unavailable: 2, recreate: true, wantCreated: 5},
		{replicas: 5, surge: 2, unavailable: 0, recreate: true, wantCreated: 5},
		{replicas: 9, surge: 1, unavailable: 0, recreate: true, wantCreated: 9},
		{replicas: 30, surge: 3, unavailable: 3, recreate: true, wantCreated: 30},
		{replicas: 30, surge: 0, unavailable: 6, recreate: false, wantCreated: 0},
	} {
		name := fmt.Sprintf("replicas=%d surge=%d unavailable=%d recreate=%v", tc.replicas, tc.surge, tc.unavailable, tc.recreate)
		t.Run(name, func(t *testing.T) {
			r := &rollout{t: t, b: Budget{Replicas: tc.replicas, MaxSurge: tc.surge, MaxUnavailable: tc.unavailable, ScaleMaxUnavailable: 1 << 30},
				pods: pods(tc.replicas, PodFacts{Available: true, Recreate: tc.recreate})}
			for i := 0; !r.done(); i++ {
				if i > 10*tc.replicas {
					t.Fatalf("no convergence after %d reconciles: %+v", i, r.pods)
				}
				if !r.step(i) {
					r.settle()
				}
			}
			if r.created != tc.wantCreated || r.deleted != tc.wantCreated {
				t.Errorf("created %d and deleted %d pods, want %d each (in place: %d)", r.created, r.deleted, tc.wantCreated, r.inPlace)
			}
		})
	}
}
