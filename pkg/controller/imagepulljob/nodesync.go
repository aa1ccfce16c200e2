package imagepulljob

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// owners is what the node sync knows about the job owners of a NodeImage.
type owners struct {
	// known maps a job UID to its plan (the job exists and has been synced).
	known map[types.UID]*plan
	// unknown: jobs that exist but have no plan yet (e.g. right after a
	// restart); their requests are left as they are.
	unknown map[types.UID]bool
	// dropped: keys of existing jobs, deleting or holding the protection
	// finalizer, whose references were removed.
	dropped map[string]bool
	// gone caches the live lookups of jobs missing from the cache.
	gone map[types.UID]bool
}

// syncNodeImage makes one NodeImage's spec agree with the plans of every job
// naming it, in at most one update:
//   - an owner reference of an ImagePullJob that no longer exists (checked by
//     a live GET), that finished, that no longer targets this node, or that
//     now pulls another image, is removed; a tag left without owners is
//     removed, and an image left without tags;
//   - a planned job's reference is added (creating the tag, or the image, if
//     needed) and a re-pull it asked for bumps the tag's version;
//   - the merged fields of every tag and image with job owners are
//     recomputed (see mergeTag and mergeImage);
//   - when the result would break the NodeImage's budget (budget.go), the
//     requests that do not fit are left out, and their jobs told why.
//
// Only spec is written, never status (the daemon's).
func (c *Controller) syncNodeImage(ctx context.Context, name string) (time.Duration, error) {
	ni, err := c.niLister.Get(name)
	if apierrors.IsNotFound(err) {
		c.setRefusals(name, nil)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	o := &owners{known: map[types.UID]*plan{}, unknown: map[types.UID]bool{}, dropped: map[string]bool{}, gone: map[types.UID]bool{}}
	spec := ni.Spec.DeepCopy()
	pruned := map[string]bool{}

	// 1. Drop references that should go.
	for repo, img := range spec.Images {
		for i := range img.Tags {
			t := &img.Tags[i]
			var kept []corev1.ObjectReference
			for _, ref := range t.OwnerReferences {
				if isJobRef(ref) {
					keep, err := c.keepRef(ctx, o, ref, name, repo, t.Tag)
					if err != nil {
						return 0, err
					}
					if !keep {
						pruned[repo] = true
						continue
					}
				}
				kept = append(kept, ref)
			}
			t.OwnerReferences = kept
		}
	}

	// 2. The planned requests, within the NodeImage's budget (budget.go).
	now := metav1.NewTime(c.clock.Now())
	var plans []*plan
	for _, p := range c.plans.forNode(name) {
		if _, ok := p.nodes[name]; ok && !p.finished {
			plans = append(plans, p)
			o.known[types.UID(p.uid)] = p
		}
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].key < plans[j].key })
	base := spec
	spec = compose(ni, base, plans, nil, o, pruned, now, "")
	var refused map[string]string
	if problem := c.overBudget(spec); problem != "" {
		klog.FromContext(ctx).V(2).Info("NodeImage would be over its budget; leaving the youngest requests out", "nodeImage", name, "problem", problem)
		spec, refused = c.admit(ni, base, plans, o, pruned, now)
	}

	if apiequality.Semantic.DeepEqual(&ni.Spec, spec) {
		c.setRefusals(name, refused)
		return 0, nil
	}
	cp := ni.DeepCopy()
	cp.Spec = *spec
	if _, err := c.kruiseClient.AppsV1beta1().NodeImages().Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	c.setRefusals(name, refused)
	klog.FromContext(ctx).V(4).Info("Updated NodeImage", "nodeImage", name, "plans", len(plans))
	for key := range o.dropped {
		c.jobQueue.Add(key) // a deleting job may now drop its finalizer
	}
	return 0, nil
}

// keepRef decides whether a job owner reference on repo:tag of node stays.
func (c *Controller) keepRef(ctx context.Context, o *owners, ref corev1.ObjectReference, node, repo, tag string) (bool, error) {
	key := ref.Namespace + "/" + ref.Name
	job, err := c.jobLister.ImagePullJobs(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err == nil && job.UID == ref.UID {
		p := c.plans.get(key)
		if p == nil || p.uid != string(ref.UID) {
			o.unknown[ref.UID] = true
			return true, nil
		}
		_, planned := p.nodes[node]
		if p.finished || !planned || p.repo != repo || p.tag != tag {
			if job.DeletionTimestamp != nil || hasFinalizer(job, v1beta1.ProtectionFinalizer) {
				o.dropped[key] = true // its finalizer may go now (release)
			}
			return false, nil
		}
		o.known[ref.UID] = p
		return true, nil
	}
	// Not in the cache (or another job of the same name): make sure it is
	// gone before dropping its request; a cache lagging behind a new job
	// must not withdraw it.
	if gone, ok := o.gone[ref.UID]; ok {
		if !gone {
			o.unknown[ref.UID] = true
		}
		return !gone, nil
	}
	live, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		o.gone[ref.UID] = true
	case err != nil:
		return false, err
	default:
		o.gone[ref.UID] = live.UID != ref.UID
	}
	if o.gone[ref.UID] {
		klog.FromContext(ctx).V(2).Info("Removing request of a deleted ImagePullJob", "nodeImage", node, "imagePullJob", key, "uid", ref.UID)
		return false, nil
	}
	o.unknown[ref.UID] = true
	return true, nil
}
