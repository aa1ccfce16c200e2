package cloneset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// history is a CloneSet's revisions resolved: the current and update revisions' names and the
// pod template of every revision, to compare a pod's with the update's.
type history struct {
	*revision.Revisions
	templates map[string]*corev1.PodTemplateSpec
}

func (h *history) currentName() string { return h.Current.Name }
func (h *history) updateName() string  { return h.Update.Name }

// template is the pod template of revision name; nil when it is not in the history.
func (h *history) template(name string) *corev1.PodTemplateSpec { return h.templates[name] }

func (c *Controller) resolveHistory(ctx context.Context, cs *appsv1beta1.CloneSet, selector labels.Selector) (*history, error) {
	owner := revision.Owner{Object: cs, Kind: controllerKind, Selector: selector}
	revs, templates, err := c.history.ResolveTemplate(ctx, owner, &cs.Spec.Template, cs.Status.CurrentRevision, cs.Status.CollisionCount)
	if err != nil {
		return nil, err
	}
	return &history{Revisions: revs, templates: templates}, nil
}
