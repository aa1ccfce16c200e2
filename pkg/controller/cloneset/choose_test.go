package cloneset

import (
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// byName orders pods by name, standing in for pkg/workload/podorder.
func byName(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func cand(name string, f PodFacts) Candidate { return Candidate{Pod: gen.Pod(name), Facts: f} }

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestChooseDeletes(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Diff
		pods []Candidate
		want []string
	}{{
		name: "pods asked to go: unavailable always, available within the limit",
		d:    Diff{DeleteReadyLimit: 1},
		pods: []Candidate{cand("a", PodFacts{SpecifiedDelete: true, Available: true}), cand("b", PodFacts{SpecifiedDelete: true, Available: true}), cand("c", PodFacts{SpecifiedDelete: true}), cand("d", newReady)},
		want: []string{"a", "c"},
	}, {
		name: "scale down takes old pods first",
		d:    Diff{ScaleDown: 2, ScaleDownOld: 1, DeleteReadyLimit: 5},
		pods: []Candidate{cand("a", newReady), cand("b", oldReady), cand("c", newReady), cand("d", oldReady)},
		want: []string{"b", "a"},
	}, {
		name: "too few new pods: the rest from old ones",
		d:    Diff{ScaleDown: 3, ScaleDownOld: 1, DeleteReadyLimit: 5},
		pods: []Candidate{cand("a", newReady), cand("b", oldReady), cand("d", oldReady)},
		want: []string{"b", "a", "d"},
	}, {
		name: "pods waiting on their preDelete hook are not chosen again",
		d:    Diff{ScaleDown: 1, DeleteReadyLimit: 5},
		pods: []Candidate{cand("a", newPreDeleted), cand("b", newReady)},
		want: []string{"b"},
	}, {
		name: "an old pod held back by the ready limit is not replaced by a new pod",
		d:    Diff{ScaleDown: 1, ScaleDownOld: 1, DeleteReadyLimit: 0},
		pods: []Candidate{cand("a", oldReady), cand("b", newUnready)},
		want: []string{},
	}, {
		name: "a held-back pod keeps its place in the count",
		d:    Diff{ScaleDown: 2, ScaleDownOld: 2, DeleteReadyLimit: 0},
		pods: []Candidate{cand("a", oldReady), cand("b", oldUnready), cand("c", oldUnready), cand("d", newUnready)},
		want: []string{"b"},
	}, {
		name: "no ready budget: only unavailable pods go",
		d:    Diff{ScaleDown: 2, DeleteReadyLimit: 0},
		pods: []Candidate{cand("a", newReady), cand("b", newUnready), cand("c", newReady)},
		want: []string{"b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(ChooseDeletes(tc.d, tc.pods, byName)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ChooseDeletes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChooseUpdates(t *testing.T) {
	olds := []Candidate{cand("a", oldReady), cand("b", oldUnready), cand("c", oldReady), cand("d", oldReady)}
	for _, tc := range []struct {
		name        string
		d           Diff
		unavailable int
		want        []string
	}{
		{name: "within maxUnavailable; an unavailable pod costs nothing", d: Diff{Update: 4, UpdateMaxUnavailable: 2}, unavailable: 1, want: []string{"a", "b"}},
		{name: "at most Update", d: Diff{Update: 1, UpdateMaxUnavailable: 4}, want: []string{"a"}},
		{name: "no room", d: Diff{Update: 4, UpdateMaxUnavailable: 1}, unavailable: 1, want: []string{"b"}},
		{name: "room for all", d: Diff{Update: 4, UpdateMaxUnavailable: 5}, unavailable: 1, want: []string{"a", "b", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(ChooseUpdates(tc.d, olds, tc.unavailable, byName)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ChooseUpdates = %v, want %v", got, tc.want)
			}
		})
	}
}
