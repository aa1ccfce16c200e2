package imagepulljob

import (
	"sort"

	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Several jobs may ask for one tag, and for tags of one image: their
// requests merge into the one entry the NodeImage has room for.

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
