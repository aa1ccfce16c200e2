package rollout

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// ownedRevisions lists the ControllerRevisions w controls, oldest first.
func ownedRevisions(ctx context.Context, c *clients, w workload) ([]*appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(w.podSelector())
	if err != nil {
		return nil, fmt.Errorf("reading the selector of %q: %w", w.GetName(), err)
	}
	list, err := c.kube.AppsV1().ControllerRevisions(w.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of %q: %w", w.GetName(), err)
	}
	var owned []*appsv1.ControllerRevision
	for i := range list.Items {
		r := &list.Items[i]
		if owner := metav1.GetControllerOf(r); owner != nil && owner.UID == w.GetUID() {
			owned = append(owned, r)
		}
	}
	slices.SortFunc(owned, func(a, b *appsv1.ControllerRevision) int {
		switch {
		case a.Revision < b.Revision:
			return -1
		case a.Revision > b.Revision:
			return 1
		}
		return 0
	})
	return owned, nil
}

// findRevision returns revision number of revisions; 0 is the one before
// the latest (where `undo` goes back to).
func findRevision(revisions []*appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	if number == 0 {
		if len(revisions) < 2 {
			return nil, fmt.Errorf("no previous revision to roll back to")
		}
		return revisions[len(revisions)-2], nil
	}
	for _, r := range revisions {
		if r.Revision == number {
			return r, nil
		}
	}
	return nil, fmt.Errorf("unable to find the specified revision %d in history", number)
}

// revisionTemplate decodes the pod template a revision recorded.
func revisionTemplate(r *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var template corev1.PodTemplateSpec
	if err := revision.DecodeData(r.Data.Raw, &template, "spec", "template"); err != nil {
		return nil, fmt.Errorf("reading revision %d (%s): %w", r.Revision, r.Name, err)
	}
	return &template, nil
}

// templateMatches reports whether r recorded template.
func templateMatches(r *appsv1.ControllerRevision, template *corev1.PodTemplateSpec) bool {
	data, err := revision.PatchData(template, "spec", "template")
	return err == nil && revision.EqualData(data, r.Data.Raw)
}
