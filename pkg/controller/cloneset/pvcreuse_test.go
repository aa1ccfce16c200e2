package cloneset

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// A pod deleted by someone else, PVC reuse on: its replacement is not created while the pod is
// still terminating (it would take a new instance ID, leaving the PVC unused), the pass looks
// again when the pod would be overdue, and once the pod is gone the replacement takes its name
// and PVC. Seen on the local cluster: every graceful delete gave the replacement a new ID.
func TestReplacementWaitsForTheDeletedPodsName(t *testing.T) {
	withClaims := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.ScaleStrategy.EnablePVCReuse = true
		cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	}
	cs := cloneSet(2, "app:1", withClaims)
	rev := revisionOf(t, cs, 1)
	kept, deleted := runningPod(t, cs, rev, "aaaaa"), runningPod(t, cs, rev, "bbbbb")
	deleted.DeletionTimestamp = &metav1.Time{Time: t0.Add(-10 * time.Second)}
	recipe := PodRecipe{Owner: *metav1.NewControllerRef(cs, controllerKind), Namespace: cs.Namespace, CloneSet: cs.Name,
		ClaimTemplates: cs.Spec.VolumeClaimTemplates, MatchLabels: cs.Spec.Selector.MatchLabels}
	claims := append(NewClaims(recipe, "aaaaa"), NewClaims(recipe, "bbbbb")...)

	sync := func(pods ...*corev1.Pod) (time.Duration, []k8stesting.Action) {
		t.Helper()
		f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, pods...)
		for _, c := range claims {
			if err := f.ctrl.claimIndex.Add(c); err != nil {
				t.Fatal(err)
			}
		}
		_, ctx := ktesting.NewTestContext(t)
		after, err := f.ctrl.sync(ctx, testNS+"/"+cs.Name)
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		return after, f.actions()
	}

	after, acts := sync(kept, deleted)
	for _, a := range acts {
		if a.GetVerb() == "create" {
			t.Errorf("created %s while the pod holding the PVC to reuse terminates", a.GetResource().Resource)
		}
	}
	if after <= 0 || after > 50*time.Second {
		t.Errorf("looks again in %s, want by the time the deleted pod is overdue (50s)", after)
	}

	_, acts = sync(kept)
	var created []string
	for _, a := range acts {
		if c, ok := a.(k8stesting.CreateAction); ok {
			obj := c.GetObject().(metav1.Object)
			created = append(created, a.GetResource().Resource+"/"+obj.GetName())
		}
	}
	if len(created) != 1 || created[0] != "pods/web-bbbbb" {
		t.Errorf("created %v, want only pods/web-bbbbb: the deleted pod's name, with its PVC as it is", created)
	}
}
