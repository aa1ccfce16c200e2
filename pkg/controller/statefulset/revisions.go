package statefulset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// history is a set's revisions resolved, with the pod template of each.
type history struct {
	*revision.Revisions
	templates map[string]*corev1.PodTemplateSpec
}

func (h *history) currentName() string { return h.Current.Name }
func (h *history) updateName() string  { return h.Update.Name }

// template is the pod template of revision name; nil when it is not in the history.
func (h *history) template(name string) *corev1.PodTemplateSpec { return h.templates[name] }

func (c *Controller) resolveHistory(ctx context.Context, set *appsv1beta1.StatefulSet, selector labels.Selector) (*history, error) {
	owner := revision.Owner{Object: set, Kind: controllerKind, Selector: selector}
	revs, templates, err := c.history.ResolveTemplate(ctx, owner, &set.Spec.Template, set.Status.CurrentRevision, set.Status.CollisionCount)
	if err != nil {
		return nil, err
	}
	return &history{Revisions: revs, templates: templates}, nil
}
