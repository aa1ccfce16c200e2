package revision

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// claim returns the revisions owner controls once orphans matching its
// selector are adopted and its revisions that no longer match are released,
// as the built-in controllers' ControllerRefManager does. Revisions of other
// controllers are left alone. A revision that fails to be adopted or
// released is left out, and the errors are returned with the rest.
func (h *History) claim(ctx context.Context, owner Owner, all []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, error) {
	logger := klog.FromContext(ctx)
	adopter := adopter{owner: owner}
	var claimed []*appsv1.ControllerRevision
	var errs []error
	for _, rev := range all {
		matches := owner.Selector.Matches(labels.Set(rev.Labels))
		switch {
		case owner.owns(rev) && matches:
			claimed = append(claimed, rev)
		case owner.owns(rev):
			if err := h.release(ctx, owner, rev); err != nil {
				errs = append(errs, err)
				continue
			}
			logger.V(2).Info("Released revision that no longer matches the selector", "revision", klog.KObj(rev))
		case matches && metav1.GetControllerOfNoCopy(rev) == nil:
			if adopter.canAdopt(ctx) != nil {
				continue // reported once, below
			}
			adopted, err := h.adopt(ctx, owner, rev)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			logger.V(2).Info("Adopted orphan revision", "revision", klog.KObj(rev))
			claimed = append(claimed, adopted)
		}
	}
	if adopter.err != nil {
		errs = append(errs, adopter.err)
	}
	return claimed, errors.Join(errs...)
}

// adopter asks the owner's Recheck once, the first time an orphan is found.
type adopter struct {
	owner   Owner
	checked bool
	err     error
}

func (a *adopter) canAdopt(ctx context.Context) error {
	if a.checked {
		return a.err
	}
	a.checked = true
	switch {
	case a.owner.Object.GetDeletionTimestamp() != nil:
		a.err = fmt.Errorf("not adopting revisions: %s is being deleted", klog.KObj(a.owner.Object))
	case a.owner.Recheck != nil:
		if err := a.owner.Recheck(ctx); err != nil {
			a.err = fmt.Errorf("not adopting revisions of %s: %w", klog.KObj(a.owner.Object), err)
		}
	}
	return a.err
}

// adopt makes owner the controller of the orphan rev. The update carries
// rev's resourceVersion, so it fails if anyone changed rev meanwhile.
func (h *History) adopt(ctx context.Context, owner Owner, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	update := rev.DeepCopy()
	update.OwnerReferences = append(update.OwnerReferences, *metav1.NewControllerRef(owner.Object, owner.Kind))
	adopted, err := h.writer.Update(ctx, update)
	if err != nil {
		return nil, fmt.Errorf("adopting revision %s: %w", klog.KObj(rev), err)
	}
	return adopted, nil
}

// release removes owner from rev's owners. A revision already gone or
// being deleted needs no release.
func (h *History) release(ctx context.Context, owner Owner, rev *appsv1.ControllerRevision) error {
	update := rev.DeepCopy()
	update.OwnerReferences = slices.DeleteFunc(update.OwnerReferences, func(ref metav1.OwnerReference) bool {
		return ref.UID == owner.Object.GetUID()
	})
	_, err := h.writer.Update(ctx, update)
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("releasing revision %s: %w", klog.KObj(rev), err)
}
