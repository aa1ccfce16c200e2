package statefulset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/revision"
)

// templatePath is where a StatefulSet's revision records its pod template, as the built-in
// controller's and OpenKruise's do.
var templatePath = []string{"spec", "template"}

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
	data, err := revision.PatchData(set.Spec.Template, templatePath...)
	if err != nil {
		return nil, fmt.Errorf("recording the pod template: %w", err)
	}
	owner := revision.Owner{Object: set, Kind: controllerKind, Selector: selector}
	var collisions int32
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	revs, err := c.history.Resolve(ctx, owner, revision.Content{Data: data, Labels: set.Spec.Template.Labels}, set.Status.CurrentRevision, collisions)
	if err != nil {
		return nil, fmt.Errorf("resolving the revisions: %w", err)
	}
	h := &history{Revisions: revs, templates: map[string]*corev1.PodTemplateSpec{}}
	for _, r := range revs.All {
		t := &corev1.PodTemplateSpec{}
		if err := revision.DecodeData(r.Data.Raw, t, templatePath...); err != nil {
			continue // a revision we cannot read: pods at it are recreated (or refused, InPlaceOnly)
		}
		h.templates[r.Name] = t
	}
	return h, nil
}
