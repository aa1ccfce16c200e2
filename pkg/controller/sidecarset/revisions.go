package sidecarset

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

var controllerKind = appsv1beta1.SchemeGroupVersion.WithKind("SidecarSet")

// owner is ss as the owner of its ControllerRevisions, which live in kruise's namespace and
// carry NameLabel.
func (c *Controller) owner(ss *appsv1beta1.SidecarSet) revision.Owner {
	return revision.Owner{
		Object:    ss,
		Kind:      controllerKind,
		Selector:  labels.SelectorFromSet(labels.Set{sidecarrules.NameLabel: ss.Name}),
		Namespace: c.namespace,
		Recheck: func(ctx context.Context) error {
			fresh, err := c.kruiseClient.AppsV1beta1().SidecarSets().Get(ctx, ss.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("rechecking SidecarSet %s: %w", ss.Name, err)
			}
			if fresh.UID != ss.UID || fresh.DeletionTimestamp != nil {
				return fmt.Errorf("SidecarSet %s was replaced or is being deleted", ss.Name)
			}
			return nil
		},
	}
}

// revisionContent is what ss's revision records: RevisionData, labelled with its name and,
// when spec.customVersion is set, that version (injectionStrategy.revision.customVersion
// finds a revision by it).
func revisionContent(ss *appsv1beta1.SidecarSet) (revision.Content, error) {
	data, err := sidecarrules.RevisionData(ss)
	if err != nil {
		return revision.Content{}, fmt.Errorf("SidecarSet %s: revision data: %w", ss.Name, err)
	}
	lbls := map[string]string{sidecarrules.NameLabel: ss.Name}
	if ss.Spec.CustomVersion != "" {
		lbls[appsv1beta1.SidecarSetCustomVersionLabel] = ss.Spec.CustomVersion
	}
	return revision.Content{Data: data, Labels: lbls}, nil
}

// syncRevisions finds or creates the revision of ss as it is now and deletes the oldest ones
// beyond revisionHistoryLimit, never one still live (liveRevisions).
func (c *Controller) syncRevisions(ctx context.Context, ss *appsv1beta1.SidecarSet, pods []*corev1.Pod) (*revision.Revisions, error) {
	content, err := revisionContent(ss)
	if err != nil {
		return nil, err
	}
	collisions := int32(0)
	if ss.Status.CollisionCount != nil {
		collisions = *ss.Status.CollisionCount
	}
	revs, err := c.history.Resolve(ctx, c.owner(ss), content, ss.Status.LatestRevision, collisions)
	if err != nil {
		return revs, fmt.Errorf("resolving the revision of SidecarSet %s: %w", ss.Name, err)
	}
	if err := c.labelCustomVersion(ctx, ss, revs); err != nil {
		return revs, err
	}
	limit := revision.HistoryLimit(ss.Spec.RevisionHistoryLimit)
	if err := c.history.Truncate(ctx, revs.All, limit, liveRevisions(ss, revs, pods)); err != nil {
		return revs, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
	}
	return revs, nil
}

// liveRevisions are the revisions of ss truncation must keep: the latest, those pods were
// injected or upgraded from (their HashAnnotation entry's controllerRevision), and those
// injectionStrategy.revision names, by name or by custom version.
func liveRevisions(ss *appsv1beta1.SidecarSet, revs *revision.Revisions, pods []*corev1.Pod) sets.Set[string] {
	live := revs.Live(nil)
	for _, pod := range pods {
		specs, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashAnnotation)
		if err != nil {
			continue
		}
		if rev := specs[ss.Name].ControllerRevision; rev != "" {
			live.Insert(rev)
		}
	}
	pinned := ss.Spec.InjectionStrategy.Revision
	if pinned == nil {
		return live
	}
	if pinned.RevisionName != nil && *pinned.RevisionName != "" {
		live.Insert(*pinned.RevisionName)
	}
	if pinned.CustomVersion != nil && *pinned.CustomVersion != "" {
		for _, rev := range revs.All {
			if carriesVersion(rev, *pinned.CustomVersion) {
				live.Insert(rev.Name)
			}
		}
	}
	return live
}

// labelCustomVersion labels the latest revision with spec.customVersion when it lacks it: a
// revision is re-used when only customVersion changed (the injected part is the same), and
// injectionStrategy.revision.customVersion must still find it by the new version.
func (c *Controller) labelCustomVersion(ctx context.Context, ss *appsv1beta1.SidecarSet, revs *revision.Revisions) error {
	v := ss.Spec.CustomVersion
	if v == "" || carriesVersion(revs.Update, v) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1beta1.SidecarSetCustomVersionLabel: v}}})
	if err != nil {
		return fmt.Errorf("encoding the custom version label: %w", err)
	}
	updated, err := c.client.AppsV1().ControllerRevisions(revs.Update.Namespace).Patch(ctx, revs.Update.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("labelling revision %s with custom version %s: %w", revs.Update.Name, v, err)
	}
	for i := range revs.All {
		if revs.All[i].Name == updated.Name {
			revs.All[i] = updated
		}
	}
	revs.Update = updated
	return nil
}

func carriesVersion(rev *appsv1.ControllerRevision, version string) bool {
	return rev.Labels[appsv1beta1.SidecarSetCustomVersionLabel] == version
}
