package cloneset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// podWrites are the pods the kube client updated (spec and metadata), by name.
func podWrites(f *fixture) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, act := range f.actions() {
		if u, ok := act.(k8stesting.UpdateAction); ok && act.GetResource().Resource == "pods" && act.GetSubresource() == "" {
			p := u.GetObject().(*corev1.Pod)
			out[p.Name] = p
		}
	}
	return out
}

// rollbackFixture: three pods at app:2 (the update revision), app:1 the current revision, and
// the partition raised to 3 (every pod should be at app:1).
func rollbackFixture(t *testing.T, gate bool, mods ...func(*appsv1beta1.CloneSet)) (*fixture, *appsv1.ControllerRevision) {
	t.Helper()
	partition := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(3))
		for _, m := range mods {
			m(cs)
		}
	}
	old := cloneSet(3, "app:1", partition)
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(3, "app:2", partition)
	newRev := revisionOf(t, cs, 2)
	cs.Status.CurrentRevision, cs.Status.UpdateRevision = oldRev.Name, newRev.Name
	var pods []*corev1.Pod
	for _, id := range []string{"aaaaa", "bbbbb", "ccccc"} {
		pods = append(pods, runningPod(t, cs, newRev, id))
	}
	return newFixtureWith(t, cs, []*appsv1.ControllerRevision{oldRev, newRev}, pods, fixtureExtras{partitionRollback: gate}), oldRev
}

func TestPartitionRollback(t *testing.T) {
	t.Run("gate off: updated pods stay updated", func(t *testing.T) {
		f, _ := rollbackFixture(t, false)
		f.sync()
		if w := podWrites(f); len(w) != 0 {
			t.Errorf("pods updated without CloneSetPartitionRollback: %v", w)
		}
	})
	t.Run("gate on: one pod back to the current revision in place (maxUnavailable 1)", func(t *testing.T) {
		f, oldRev := rollbackFixture(t, true)
		f.sync()
		w := podWrites(f)
		if len(w) != 1 {
			t.Fatalf("%d pods updated, want 1: %v", len(w), f.actions())
		}
		for _, p := range w {
			if p.Spec.Containers[0].Image != "app:1" || p.Labels[appsv1.ControllerRevisionHashLabelKey] != oldRev.Name ||
				p.Labels[PodTemplateHashLabel] != revision.ShortHash(oldRev.Name) {
				t.Errorf("pod %s rolled back to image %s, labels %v; want app:1 at %s", p.Name, p.Spec.Containers[0].Image, p.Labels, oldRev.Name)
			}
		}
		for _, act := range f.actions() {
			if act.GetVerb() == "delete" || (act.GetVerb() == "create" && act.GetResource().Resource == "pods") {
				t.Errorf("an in-place rollback created or deleted a pod: %v", act)
			}
		}
	})
	t.Run("gate on, ReCreate: the pod is marked for recreation", func(t *testing.T) {
		f, _ := rollbackFixture(t, true, func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
		})
		f.sync()
		if !patched(f, appsv1beta1.SpecifiedDeleteKey) {
			t.Errorf("no pod marked for recreation: %v", f.actions())
		}
	})
	t.Run("gate on, inPlaceUpdate hook: the pod waits in PreparingUpdate, not sent back to Normal", func(t *testing.T) {
		hook := func(cs *appsv1beta1.CloneSet) {
			cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
		}
		f, _ := rollbackFixture(t, true, hook)
		for _, p := range f.ctrl.podIndex.List() {
			pod := p.(*corev1.Pod)
			pod.Labels["hold"] = "true"
		}
		f.sync()
		if !patched(f, string(pub.LifecycleStatePreparingUpdate)) {
			t.Fatalf("no pod set to PreparingUpdate: %v", f.actions())
		}
		// The pod waiting on its hook at the update revision is what the rollback moves: the
		// next pass leaves it waiting (the reference's refresh sends it back to Normal, which
		// the next update pass undoes, without end).
		f2, _ := rollbackFixture(t, true, hook)
		for i, p := range f2.ctrl.podIndex.List() {
			pod := p.(*corev1.Pod)
			pod.Labels["hold"] = "true"
			if i == 0 {
				pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
			}
		}
		f2.sync()
		if patched(f2, `"`+string(pub.LifecycleStateNormal)+`"`) {
			t.Errorf("a pod waiting to be rolled back was sent back to Normal: %v", f2.actions())
		}
	})
}

// A pod in PreparingUpdate is not available (its state is not Normal); made unready too, it is
// the scale-in's first choice among old pods. Counted as updated (gate PreparingUpdateAsUpdate),
// it is taken after the old pods: the other old pod goes.
func TestPreparingUpdateAsUpdateScaleIn(t *testing.T) {
	hook := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	}
	for _, tc := range []struct {
		gate    bool
		deleted string
	}{{false, "web-bbbbb"}, {true, "web-aaaaa"}} {
		old := cloneSet(3, "app:1", hook)
		oldRev := revisionOf(t, old, 1)
		cs := cloneSet(3, "app:2", hook)
		newRev := revisionOf(t, cs, 2)
		cs.Status.CurrentRevision = oldRev.Name
		a, b := runningPod(t, cs, oldRev, "aaaaa"), runningPod(t, cs, oldRev, "bbbbb")
		b.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
		b.Status.Conditions[0].Status = corev1.ConditionFalse
		c, d := runningPod(t, cs, newRev, "ccccc"), runningPod(t, cs, newRev, "ddddd")
		for _, p := range []*corev1.Pod{a, b, c, d} {
			p.Labels["hold"] = "true"
		}
		f := newFixtureWith(t, cs, []*appsv1.ControllerRevision{oldRev, newRev}, []*corev1.Pod{a, b, c, d},
			fixtureExtras{preparingUpdateAsUpdate: tc.gate})
		f.sync()
		var deleted []string
		for _, act := range f.actions() {
			if d, ok := act.(k8stesting.DeleteAction); ok && act.GetResource().Resource == "pods" {
				deleted = append(deleted, d.GetName())
			}
		}
		if len(deleted) != 1 || deleted[0] != tc.deleted {
			t.Errorf("PreparingUpdateAsUpdate %v: deleted %v, want [%s]", tc.gate, deleted, tc.deleted)
		}
	}
}

func TestPreparingUpdateAsUpdated(t *testing.T) {
	pod := func(state pub.LifecycleStateType) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{pub.LifecycleStateKey: string(state)}}}
	}
	pods := []*corev1.Pod{pod(pub.LifecycleStateNormal), pod(pub.LifecycleStatePreparingUpdate), pod(pub.LifecycleStateUpdating)}
	facts := []PodFacts{{Recreate: true}, {Recreate: true}, {}}
	got := PreparingUpdateAsUpdated(pods, facts)
	want := []PodFacts{{Recreate: true}, {Updated: true}, {}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pod %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if facts[1].Updated {
		t.Error("the update pass's facts were changed")
	}
}

func TestShortHash(t *testing.T) {
	cs := cloneSet(2, "app:1")
	rev := revisionOf(t, cs, 1)
	t.Run("new pods carry the hash alone, read as at the revision", func(t *testing.T) {
		f := newFixtureWith(t, cs, []*appsv1.ControllerRevision{rev}, nil, fixtureExtras{shortHash: true})
		f.sync()
		var created []*corev1.Pod
		for _, act := range f.actions() {
			if c, ok := act.(k8stesting.CreateAction); ok && act.GetResource().Resource == "pods" {
				created = append(created, c.GetObject().(*corev1.Pod))
			}
		}
		if len(created) != 2 {
			t.Fatalf("created %d pods, want 2", len(created))
		}
		for _, p := range created {
			if got, want := p.Labels[appsv1.ControllerRevisionHashLabelKey], revision.ShortHash(rev.Name); got != want || strings.Contains(got, "-") {
				t.Errorf("pod %s controller-revision-hash %q, want %q", p.Name, got, want)
			}
			if got := p.Labels[PodTemplateHashLabel]; got != revision.ShortHash(rev.Name) {
				t.Errorf("pod %s pod-template-hash %q", p.Name, got)
			}
		}
		facts := Facts(created, FactsOptions{UpdateRevision: rev.Name, Now: t0})
		for i, fct := range facts {
			if !fct.Updated {
				t.Errorf("pod %s with a short label is not read as updated", created[i].Name)
			}
		}
		if c := Tally(created, rev.Name, 0, t0); c.Updated != 2 {
			t.Errorf("status counts %d updated pods, want 2", c.Updated)
		}
	})
	t.Run("gate off: the full name", func(t *testing.T) {
		f := newFixtureWith(t, cs, []*appsv1.ControllerRevision{rev}, nil, fixtureExtras{})
		f.sync()
		for _, act := range f.actions() {
			if c, ok := act.(k8stesting.CreateAction); ok && act.GetResource().Resource == "pods" {
				if got := c.GetObject().(*corev1.Pod).Labels[appsv1.ControllerRevisionHashLabelKey]; got != rev.Name {
					t.Errorf("controller-revision-hash %q, want %q", got, rev.Name)
				}
			}
		}
	})
	t.Run("an in-place update writes the short form; a short-labelled old pod is updated in place", func(t *testing.T) {
		newCS := cloneSet(1, "app:2")
		newRev := revisionOf(t, newCS, 2)
		newCS.Status.CurrentRevision = rev.Name
		p := runningPod(t, newCS, rev, "aaaaa")
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = revision.ShortHash(rev.Name)
		f := newFixtureWith(t, newCS, []*appsv1.ControllerRevision{rev, newRev}, []*corev1.Pod{p}, fixtureExtras{shortHash: true})
		f.sync()
		w := podWrites(f)["web-aaaaa"]
		if w == nil {
			t.Fatalf("the pod was not updated in place: %v", f.actions())
		}
		if got := w.Labels[appsv1.ControllerRevisionHashLabelKey]; got != revision.ShortHash(newRev.Name) {
			t.Errorf("controller-revision-hash %q after the update, want %q", got, revision.ShortHash(newRev.Name))
		}
		if w.Spec.Containers[0].Image != "app:2" {
			t.Errorf("image %s", w.Spec.Containers[0].Image)
		}
	})
}
