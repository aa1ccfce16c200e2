package cloneset

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// LivePodsToDelete is names without those of pods that are gone: a name kept in
// scaleStrategy.podsToDelete after its pod was deleted would delete the next pod given that name
// (names are random, but a user may name one back), and the list would only grow. ok is false when
// nothing is to be removed.
func LivePodsToDelete(names []string, live map[string]bool) (kept []string, ok bool) {
	for _, n := range names {
		if live[n] {
			kept = append(kept, n)
		}
	}
	return kept, len(kept) != len(names)
}

// prunePodsToDelete writes scaleStrategy.podsToDelete without the names of pods the CloneSet no
// longer has. It runs only on a pass that acted on no pod, so a pod deleted in this pass is
// already out of the cache's active pods and not listed twice.
func (c *Controller) prunePodsToDelete(ctx context.Context, p *pass) error {
	names := p.cs.Spec.ScaleStrategy.PodsToDelete
	if len(names) == 0 {
		return nil
	}
	live := make(map[string]bool, len(p.pods))
	for _, pod := range p.pods {
		live[pod.Name] = true
	}
	kept, changed := LivePodsToDelete(names, live)
	if !changed {
		return nil
	}
	cs := p.cs.DeepCopy()
	cs.Spec.ScaleStrategy.PodsToDelete = kept
	if _, err := c.kruiseClient.AppsV1beta1().CloneSets(cs.Namespace).Update(ctx, cs, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("removing the names of deleted pods from scaleStrategy.podsToDelete: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Removed the names of deleted pods from scaleStrategy.podsToDelete",
		"removed", slices.DeleteFunc(slices.Clone(names), func(n string) bool { return live[n] }))
	return nil
}
