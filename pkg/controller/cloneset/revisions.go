package cloneset

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// history is a CloneSet's revisions resolved, with the pod template of each, to compare a pod's
// with the update's.
type history = revision.Templated

func (c *Controller) resolveHistory(ctx context.Context, cs *appsv1beta1.CloneSet, selector labels.Selector) (*history, error) {
	owner := revision.Owner{Object: cs, Kind: controllerKind, Selector: selector}
	return c.history.ResolveTemplated(ctx, owner, &cs.Spec.Template, cs.Status.CurrentRevision, cs.Status.CollisionCount)
}
