package imagepulljob

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

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
