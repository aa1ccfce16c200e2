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
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// owners is what the node sync knows about the job owners of a NodeImage.
type owners struct {
	// known maps a job UID to its plan (the job exists and has been synced).
	known map[types.UID]*plan
	// unknown: jobs that exist but have no plan yet (e.g. right after a
	// restart); their requests are left as they are.
	unknown map[types.UID]bool
	// dropped: keys of existing (deleting) jobs whose references were removed.
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
			if job.DeletionTimestamp != nil {
				o.dropped[key] = true
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

// compose returns base with the requests of admitted added, the
// references of the jobs in refused removed, and the merged fields of every
// tag and image with job owners recomputed (mergeTag, mergeImage); a tag
// left without owners by a removal is pruned, and an image left without
// tags. With only set, just that image is composed, and the result holds
// only it. Neither base nor pruned is modified.
func compose(ni *v1beta1.NodeImage, base *v1beta1.NodeImageSpec, admitted []*plan, refused map[types.UID]bool,
	o *owners, pruned map[string]bool, now metav1.Time, only string) *v1beta1.NodeImageSpec {
	spec := &v1beta1.NodeImageSpec{}
	switch img, ok := base.Images[only]; {
	case only == "":
		spec = base.DeepCopy()
	case ok:
		spec.Images = map[string]v1beta1.ImageSpec{only: *img.DeepCopy()}
	}
	gone := map[string]bool{}
	for repo := range pruned {
		gone[repo] = true
	}
	if len(refused) > 0 {
		for repo, img := range spec.Images {
			for i := range img.Tags {
				t := &img.Tags[i]
				var kept []corev1.ObjectReference
				for _, ref := range t.OwnerReferences {
					if isJobRef(ref) && refused[ref.UID] {
						gone[repo] = true
						continue
					}
					kept = append(kept, ref)
				}
				t.OwnerReferences = kept
			}
		}
	}

	// Add the requests.
	if spec.Images == nil && len(admitted) > 0 {
		spec.Images = map[string]v1beta1.ImageSpec{}
	}
	for _, p := range admitted {
		if only != "" && p.repo != only {
			continue
		}
		repullFrom := p.nodes[ni.Name]
		img := spec.Images[p.repo]
		idx := -1
		for i := range img.Tags {
			if img.Tags[i].Tag == p.tag {
				idx = i
				break
			}
		}
		if idx < 0 {
			img.Tags = append(img.Tags, v1beta1.ImageTagSpec{
				Tag:       p.tag,
				CreatedAt: ptr.To(now),
				Version:   nextVersion(ni, p.repo, p.tag),
			})
			idx = len(img.Tags) - 1
		}
		t := &img.Tags[idx]
		if !hasOwner(t, types.UID(p.uid)) {
			t.OwnerReferences = append(t.OwnerReferences, p.request.owner)
			if st := findStatus(ni, p.repo, p.tag, t.Version); st != nil && st.Phase == v1beta1.ImagePhaseFailed {
				// The job planned to join a pull under way, which failed
				// before this write: that pull was made without this job's
				// request (its pull secrets, say). Pull again, for every owner.
				t.Version++
			}
		}
		if repullFrom != 0 && t.Version == repullFrom {
			t.Version++
		}
		spec.Images[p.repo] = img
	}

	// Recompute merged fields; prune what is left without owners.
	for repo, img := range spec.Images {
		var tags []v1beta1.ImageTagSpec
		for _, t := range img.Tags {
			if len(t.OwnerReferences) == 0 && gone[repo] {
				continue
			}
			mergeTag(&t, o)
			tags = append(tags, t)
		}
		if len(tags) == 0 && gone[repo] {
			delete(spec.Images, repo)
			continue
		}
		img.Tags = tags
		mergeImage(&img, o)
		spec.Images[repo] = img
	}
	if only == "" && len(spec.Images) == 0 && ni.Spec.Images == nil {
		spec.Images = nil
	}
	return spec
}

// nextVersion is the version of a new tag entry: above any version the
// daemon still reports for the tag, so a stale result cannot be mistaken
// for the new request's.
func nextVersion(ni *v1beta1.NodeImage, repo, tag string) int64 {
	v := int64(0)
	for _, st := range ni.Status.ImageStatuses[repo].Tags {
		if st.Tag == tag && st.Version > v {
			v = st.Version
		}
	}
	return v + 1
}

// tagPlans returns the plans of a tag's job owners and whether every owner
// is a job with a known plan.
func tagPlans(t *v1beta1.ImageTagSpec, o *owners) ([]*plan, bool) {
	var out []*plan
	all := true
	for _, ref := range t.OwnerReferences {
		p := o.known[ref.UID]
		if !isJobRef(ref) || p == nil {
			all = false
			continue
		}
		out = append(out, p)
	}
	sortPlans(out)
	return out, all
}

// sortPlans orders plans oldest job first (then by key): the order in which
// conflicting sandbox keys are decided.
func sortPlans(ps []*plan) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i].request.created, ps[j].request.created
		if !a.Equal(b) {
			return a.Before(b)
		}
		return ps[i].key < ps[j].key
	})
}

// mergeTag recomputes a tag's request from its owners' when every owner is a
// job with a known plan (otherwise the tag is left as it is). Merge rule, the
// most permissive request wins: timeoutSeconds and backoffLimit are the
// largest asked; activeDeadlineSeconds and ttlSecondsAfterFinished the
// largest, or unset if any owner leaves them unset; imagePullPolicy is Always
// if any owner asks Always. Owner references are refreshed (a job's
// apiVersion written by OpenKruise becomes v1beta1).
func mergeTag(t *v1beta1.ImageTagSpec, o *owners) {
	plans, all := tagPlans(t, o)
	if !all || len(plans) == 0 {
		return
	}
	var pp v1beta1.ImageTagPullPolicy
	ipp := v1beta1.PullIfNotPresent
	deadlineUnset, ttlUnset := false, false
	for _, p := range plans {
		r := p.request
		pp.TimeoutSeconds = maxPtr(pp.TimeoutSeconds, r.pullPolicy.TimeoutSeconds)
		pp.BackoffLimit = maxPtr(pp.BackoffLimit, r.pullPolicy.BackoffLimit)
		deadlineUnset = deadlineUnset || r.pullPolicy.ActiveDeadlineSeconds == nil
		ttlUnset = ttlUnset || r.pullPolicy.TTLSecondsAfterFinished == nil
		pp.ActiveDeadlineSeconds = maxPtr(pp.ActiveDeadlineSeconds, r.pullPolicy.ActiveDeadlineSeconds)
		pp.TTLSecondsAfterFinished = maxPtr(pp.TTLSecondsAfterFinished, r.pullPolicy.TTLSecondsAfterFinished)
		if r.imagePullPolicy == v1beta1.PullAlways {
			ipp = v1beta1.PullAlways
		}
	}
	if deadlineUnset {
		pp.ActiveDeadlineSeconds = nil
	}
	if ttlUnset {
		pp.TTLSecondsAfterFinished = nil
	}
	t.PullPolicy = &pp
	t.ImagePullPolicy = ipp
	for i := range t.OwnerReferences {
		if p := o.known[t.OwnerReferences[i].UID]; p != nil {
			t.OwnerReferences[i] = p.request.owner
		}
	}
}

func maxPtr[T int32 | int64](cur, v *T) *T {
	switch {
	case v == nil:
		return cur
	case cur == nil || *v > *cur:
		return ptr.To(*v)
	}
	return cur
}

// mergeImage recomputes an image's pull secrets and sandbox config from the
// plans of the jobs owning any of its tags. Merge rule: pull secrets are the
// union (sorted by namespace/name); sandbox labels and annotations are the
// union, and when two jobs set the same key differently the oldest job
// (creationTimestamp, then namespace/name) wins. When some owner is not a
// job with a known plan, what the image already has is kept and only added
// to. An image without job owners is left alone.
func mergeImage(img *v1beta1.ImageSpec, o *owners) {
	var plans []*plan
	seen := map[string]bool{}
	all := true
	for i := range img.Tags {
		ps, tagAll := tagPlans(&img.Tags[i], o)
		all = all && tagAll
		for _, p := range ps {
			if !seen[p.key] {
				seen[p.key] = true
				plans = append(plans, p)
			}
		}
	}
	if len(plans) == 0 {
		return
	}
	sortPlans(plans)

	var secrets []v1beta1.ReferenceObject
	have := map[string]bool{}
	addSecret := func(r v1beta1.ReferenceObject) {
		if k := r.Namespace + "/" + r.Name; !have[k] {
			have[k] = true
			secrets = append(secrets, r)
		}
	}
	if !all {
		for _, r := range img.PullSecrets {
			addSecret(r)
		}
	}
	for _, p := range plans {
		for _, r := range p.request.secrets {
			addSecret(r)
		}
	}
	sortRefs(secrets)
	img.PullSecrets = secrets

	var sb *v1beta1.SandboxConfig
	if !all && img.SandboxConfig != nil {
		sb = img.SandboxConfig.DeepCopy()
	}
	for _, p := range plans {
		if p.request.sandbox == nil {
			continue
		}
		if sb == nil {
			sb = &v1beta1.SandboxConfig{}
		}
		sb.Labels = mergeMap(sb.Labels, p.request.sandbox.Labels)
		sb.Annotations = mergeMap(sb.Annotations, p.request.sandbox.Annotations)
	}
	img.SandboxConfig = sb
}

// mergeMap adds the keys of add that dst does not have (first writer wins).
func mergeMap(dst, add map[string]string) map[string]string {
	for k, v := range add {
		if dst == nil {
			dst = map[string]string{}
		}
		if _, ok := dst[k]; !ok {
			dst[k] = v
		}
	}
	return dst
}
