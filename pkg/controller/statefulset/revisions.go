package statefulset

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// history is a set's revisions resolved, with the pod template of each, to compare a pod's
// with the update's.
type history = revision.Templated

func (c *Controller) resolveHistory(ctx context.Context, set *appsv1beta1.StatefulSet, selector labels.Selector) (*history, error) {
	owner := revision.Owner{Object: set, Kind: controllerKind, Selector: selector}
	return c.history.ResolveTemplated(ctx, owner, &set.Spec.Template, set.Status.CurrentRevision, set.Status.CollisionCount)
}
