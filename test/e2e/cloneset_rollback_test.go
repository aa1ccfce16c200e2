//go:build e2e

package e2e

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Gate CloneSetPartitionRollback (on in the local overlay): raising the partition past the old
// pods takes updated pods back to the current revision, in place (same pods, old image).
func TestCloneSetPartitionRollback(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-rollback")
	variant := f.BusyboxVariant(t)

	cs := busyboxCloneSet(f, ns, "web", 3, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(1))
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	image := cs.Spec.Template.Spec.Containers[0].Image
	createCloneSet(ctx, t, kc, cs)
	waitPodsSettled(ctx, t, f, kc, ns, "web", 3)

	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant))
	partial := waitPartitioned(ctx, t, f, kc, ns, "web", 3, 2)
	current := partial.Status.CurrentRevision
	if current == partial.Status.UpdateRevision {
		t.Fatalf("current revision %s is the update revision with one pod left at the old one", current)
	}
	before := map[string]metav1.Object{}
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		before[p.Name] = p.DeepCopy()
	}

	mustPatchCloneSet(ctx, t, kc, ns, "web", `{"spec":{"updateStrategy":{"partition":3}}}`)
	waitPartitioned(ctx, t, f, kc, ns, "web", 3, 0)
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		if old, ok := before[p.Name]; !ok || old.GetUID() != p.UID {
			t.Errorf("pod %s (UID %s) is not one of the pods before the rollback: it goes back in place", p.Name, p.UID)
		}
		if got := p.Spec.Containers[0].Image; got != image || p.Labels["controller-revision-hash"] != current {
			t.Errorf("pod %s runs %s at revision %s, want %s at the current revision %s", p.Name, got, p.Labels["controller-revision-hash"], image, current)
		}
	}
}
