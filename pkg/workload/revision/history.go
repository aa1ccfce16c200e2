package revision

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// maxCreateAttempts bounds the names tried for one new revision. Each
// collision needs another revision of the same workload whose data hashes
// alike, so a handful means something else is wrong; the caller retries on
// its next sync.
const maxCreateAttempts = 8

// errTooManyCollisions is returned when maxCreateAttempts names collided.
var errTooManyCollisions = errors.New("too many revision name collisions")

// History reads a workload's revisions from a cache and writes them through
// a Writer.
type History struct {
	writer Writer
	lister appslisters.ControllerRevisionLister
}

// NewHistory returns a History that reads revisions from lister and writes them
// with client.
func NewHistory(client kubernetes.Interface, lister appslisters.ControllerRevisionLister) *History {
	return NewHistoryWithWriter(ClientsetWriter(client), lister)
}

// NewHistoryWithWriter returns a History that reads revisions from lister and
// writes them with writer.
func NewHistoryWithWriter(writer Writer, lister appslisters.ControllerRevisionLister) *History {
	return &History{writer: writer, lister: lister}
}

// Revisions is a workload's resolved history.
type Revisions struct {
	// All holds the workload's revisions, oldest first; it includes
	// Current and Update.
	All []*appsv1.ControllerRevision
	// Current is the revision named by the workload's status, or Update
	// when there is none.
	Current *appsv1.ControllerRevision
	// Update is the revision of the workload's spec as it is now.
	Update *appsv1.ControllerRevision
	// CollisionCount is the count the caller stores in the workload's
	// status; it grew if the update revision's name collided.
	CollisionCount int32
}

// List returns owner's revisions, oldest first, having adopted the orphans
// its selector matches and released those it no longer matches. On error
// the revisions that could be claimed are returned with it.
func (h *History) List(ctx context.Context, owner Owner) ([]*appsv1.ControllerRevision, error) {
	if owner.Selector == nil || owner.Selector.Empty() {
		return nil, fmt.Errorf("listing revisions of %s: empty selector", klog.KObj(owner.Object))
	}
	all, err := h.lister.ControllerRevisions(owner.namespace()).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing revisions of %s: %w", klog.KObj(owner.Object), err)
	}
	claimed, err := h.claim(ctx, owner, all)
	Sort(claimed)
	if err != nil {
		return claimed, fmt.Errorf("claiming revisions of %s: %w", klog.KObj(owner.Object), err)
	}
	return claimed, nil
}

// Resolve finds or makes the revision of content and returns it with the
// rest of owner's history. currentName is the current revision the
// workload's status names and collisionCount its collision count.
//
// When the newest revision already records content, it is the update
// revision. When an older one does (a rollback), its number is raised to
// the next one and it is re-used, so rolling back keeps the revision name
// and with it the pods made from it. Otherwise a new revision is created.
//
// On error Revisions is nil, except when creating collided with other
// revisions: then it holds only the grown CollisionCount, which the caller
// should still store so that its next attempt starts from the next name.
func (h *History) Resolve(ctx context.Context, owner Owner, content Content, currentName string, collisionCount int32) (*Revisions, error) {
	all, err := h.List(ctx, owner)
	if err != nil {
		return nil, err
	}
	count := collisionCount
	want := NewRevision(owner, content, NextNumber(all), &count)

	var update *appsv1.ControllerRevision
	switch equal := lastEqual(all, want); {
	case equal != nil && equal == all[len(all)-1]:
		update = equal
	case equal != nil:
		if update, err = h.renumber(ctx, equal, want.Revision); err != nil {
			return nil, err
		}
		all[slices.Index(all, equal)] = update
		Sort(all)
	default:
		if update, err = h.create(ctx, owner, want, &count); err != nil {
			if count != collisionCount {
				return &Revisions{CollisionCount: count}, err
			}
			return nil, err
		}
		all = append(all, update)
		Sort(all)
	}

	current := update
	if i := slices.IndexFunc(all, func(rev *appsv1.ControllerRevision) bool { return rev.Name == currentName }); i >= 0 {
		current = all[i]
	}
	return &Revisions{All: all, Current: current, Update: update, CollisionCount: count}, nil
}

// renumber gives rev the number number. On a conflict it reads rev again
// and retries, as long as rev still records the same data.
func (h *History) renumber(ctx context.Context, rev *appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	base := rev
	var updated *appsv1.ControllerRevision
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if base.Revision == number {
			updated = base
			return nil
		}
		change := base.DeepCopy()
		change.Revision = number
		var err error
		if updated, err = h.writer.Update(ctx, change); !apierrors.IsConflict(err) {
			return err
		}
		fresh, getErr := h.writer.Get(ctx, rev.Namespace, rev.Name)
		if getErr != nil {
			return getErr
		}
		if !Equal(fresh, rev) {
			return fmt.Errorf("revision changed its data while being renumbered")
		}
		base = fresh
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("renumbering revision %s to %d: %w", klog.KObj(rev), number, err)
	}
	klog.FromContext(ctx).V(2).Info("Re-used an equal revision", "revision", klog.KObj(rev), "number", number)
	return updated, nil
}

// create creates want, named after its data and *collisionCount. A
// revision of that name recording other data, or controlled by another
// workload, is a collision: *collisionCount grows and the next name is
// tried. One recording the same data for the same owner is the revision
// wanted (the cache had not shown it yet).
func (h *History) create(ctx context.Context, owner Owner, want *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	logger := klog.FromContext(ctx)
	for range maxCreateAttempts {
		hash := Hash(want.Data.Raw, collisionCount)
		attempt := want.DeepCopy()
		attempt.Name = Name(owner.Object.GetName(), hash)
		attempt.Labels[HashLabel] = hash

		created, err := h.writer.Create(ctx, attempt)
		if err == nil {
			logger.V(2).Info("Created revision", "revision", klog.KObj(created), "number", created.Revision)
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating revision %s: %w", klog.KObj(attempt), err)
		}
		existing, err := h.writer.Get(ctx, attempt.Namespace, attempt.Name)
		if apierrors.IsNotFound(err) {
			continue // deleted since: the same name is free again
		}
		if err != nil {
			return nil, fmt.Errorf("reading revision %s after a name collision: %w", klog.KObj(attempt), err)
		}
		if Equal(existing, attempt) && owner.owns(existing) {
			return existing, nil
		}
		*collisionCount++
		logger.Info("Revision name collides with another revision; trying the next name",
			"revision", klog.KObj(attempt), "collisionCount", *collisionCount)
	}
	return nil, fmt.Errorf("creating a revision of %s: %w", klog.KObj(owner.Object), errTooManyCollisions)
}
