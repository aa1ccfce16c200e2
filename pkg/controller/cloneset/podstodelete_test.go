package cloneset

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestLivePodsToDelete(t *testing.T) {
	live := map[string]bool{"web-a": true, "web-b": true}
	for _, tc := range []struct {
		names, want []string
		changed     bool
	}{
		{names: nil, want: nil, changed: false},
		{names: []string{"web-a", "web-b"}, want: []string{"web-a", "web-b"}, changed: false},
		{names: []string{"gone", "web-b"}, want: []string{"web-b"}, changed: true},
		{names: []string{"gone", "other"}, want: nil, changed: true},
	} {
		got, changed := LivePodsToDelete(tc.names, live)
		if !slices.Equal(got, tc.want) || changed != tc.changed {
			t.Errorf("LivePodsToDelete(%v) = %v, %v; want %v, %v", tc.names, got, changed, tc.want, tc.changed)
		}
	}
}

// A settled CloneSet drops the names of pods it no longer has from scaleStrategy.podsToDelete and
// keeps those of its live pods.
func TestSyncPrunesPodsToDelete(t *testing.T) {
	cs := cloneSet(1, "app:1", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-gone", "web-aaaaa"}
	})
	rev := revisionOf(t, cs, 1)
	a := runningPod(t, cs, rev, "aaaaa")
	// web-aaaaa is listed to delete: the one-replica CloneSet replaces it first, so the pass acts
	// and leaves the list alone.
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, a)
	f.sync()
	if got := f.podsToDelete(); !slices.Equal(got, []string{"web-gone", "web-aaaaa"}) {
		t.Fatalf("podsToDelete after a pass that acted = %v, want it unchanged", got)
	}

	cs = cloneSet(1, "app:1", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-gone", "web-also-gone"}
	})
	rev = revisionOf(t, cs, 1)
	f = newFixture(t, cs, []*appsv1.ControllerRevision{rev}, runningPod(t, cs, rev, "aaaaa"))
	f.sync()
	if got := f.podsToDelete(); len(got) != 0 {
		t.Fatalf("podsToDelete = %v, want empty: neither pod exists", got)
	}
}

func (f *fixture) podsToDelete() []string {
	f.t.Helper()
	cs, err := f.kruise.AppsV1beta1().CloneSets(testNS).Get(context.Background(), f.cs.Name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cs.Spec.ScaleStrategy.PodsToDelete
}
