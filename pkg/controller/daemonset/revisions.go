package daemonset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// history is a DaemonSet's revisions resolved. Pods carry the revision's hash (not its name) in
// controller-revision-hash, as the built-in DaemonSet's pods do, so that pods adopted from one
// keep their revision.
type history struct {
	*revision.Revisions
	templates map[string]*corev1.PodTemplateSpec // by hash
}

// updateHash is the hash of the update revision: the pods' label value and status.updateRevision.
func (h *history) updateHash() string { return revisionHash(h.Update.Name, h.Update.Labels) }

// template is the pod template of the revision with hash; nil when it is not in the history.
func (h *history) template(hash string) *corev1.PodTemplateSpec { return h.templates[hash] }

// revisionHash is the hash pods of a revision carry: ours from the revision's hash label; a
// revision the built-in DaemonSet or OpenKruise made (found equal to the template and adopted
// on a takeover) names it in its own controller-revision-hash label, which its pods carry, so
// they are not rolled.
func revisionHash(name string, lbls map[string]string) string {
	if h := lbls[revision.HashLabel]; h != "" {
		return h
	}
	if h := lbls[appsv1.ControllerRevisionHashLabelKey]; h != "" {
		return h
	}
	return revision.ShortHash(name)
}

func (c *Controller) resolveHistory(ctx context.Context, ds *appsv1beta1.DaemonSet, selector labels.Selector) (*history, error) {
	owner := revision.Owner{Object: ds, Kind: controllerKind, Selector: selector}
	current := ""
	if ds.Status.UpdateRevision != "" {
		current = revision.Name(ds.Name, ds.Status.UpdateRevision)
	}
	revs, byName, err := c.history.ResolveTemplate(ctx, owner, &ds.Spec.Template, current, ds.Status.CollisionCount)
	if err != nil {
		var had int32
		if ds.Status.CollisionCount != nil {
			had = *ds.Status.CollisionCount
		}
		if revs != nil && revs.CollisionCount != had {
			c.writeCollisionCount(ctx, ds, revs.CollisionCount)
		}
		return nil, err
	}
	h := &history{Revisions: revs, templates: map[string]*corev1.PodTemplateSpec{}}
	for _, r := range revs.All {
		if t, ok := byName[r.Name]; ok {
			h.templates[revisionHash(r.Name, r.Labels)] = t
		}
	}
	return h, nil
}
