package imagepulljob

import (
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// What changed between two versions of a NodeImage, and which jobs the
// change concerns: the event handlers (handlers.go) queue those jobs only.

// changedTags lists the tags whose status entries differ between old and cur.
func changedTags(old, cur *v1beta1.NodeImage) map[string]bool {
	out := map[string]bool{}
	index := func(ni *v1beta1.NodeImage) map[string][]v1beta1.ImageTagStatus {
		m := map[string][]v1beta1.ImageTagStatus{}
		for repo, st := range ni.Status.ImageStatuses {
			for _, t := range st.Tags {
				k := tagKey(repo, t.Tag)
				m[k] = append(m[k], t)
			}
		}
		return m
	}
	o, n := index(old), index(cur)
	for k, v := range n {
		if !tagStatusesEqual(o[k], v) {
			out[k] = true
		}
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			out[k] = true
		}
	}
	return out
}

// ownerKeys lists the keys of the jobs owning the tags of ni in only (all
// tags when only is nil).
func ownerKeys(ni *v1beta1.NodeImage, only map[string]bool) map[string]bool {
	out := map[string]bool{}
	for repo, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			if only != nil && !only[tagKey(repo, t.Tag)] {
				continue
			}
			for _, ref := range t.OwnerReferences {
				if isJobRef(ref) {
					out[ref.Namespace+"/"+ref.Name] = true
				}
			}
		}
	}
	return out
}

// specWakes lists the jobs that a spec change leaves waiting for a status
// update that will not come: a job whose owner reference was added to a tag
// version that already has a result. The job planned the node while the
// pull was under way; the result's status update queued the owners of that
// time only, and this write changes no status. Without this the job stayed
// "pulling" for ever. (Joining a failed version bumps it, see
// syncNodeImage; the new version's status update queues its owners.)
func specWakes(old, cur *v1beta1.NodeImage) map[string]bool {
	out := map[string]bool{}
	for repo, img := range cur.Spec.Images {
		for i := range img.Tags {
			t := &img.Tags[i]
			st := findStatus(cur, repo, t.Tag, t.Version)
			if st == nil || (st.Phase != v1beta1.ImagePhaseSucceeded && st.Phase != v1beta1.ImagePhaseFailed) {
				continue
			}
			before := old.TagSpec(repo, t.Tag)
			for _, ref := range t.OwnerReferences {
				if !isJobRef(ref) {
					continue
				}
				if before == nil || before.Version != t.Version || !hasOwner(before, ref.UID) {
					out[ref.Namespace+"/"+ref.Name] = true
				}
			}
		}
	}
	return out
}

// droppedOwners lists the jobs that own a tag in old's spec and none in
// cur's: their requests were withdrawn. A job waiting for that to release
// its protection finalizer (finalizer.go) is queued by it; the node sync's
// own queueing may run before the cache shows its write.
func droppedOwners(old, cur *v1beta1.NodeImage) map[string]bool {
	before := ownerKeys(old, nil)
	if len(before) == 0 {
		return nil
	}
	for key := range ownerKeys(cur, nil) {
		delete(before, key)
	}
	return before
}

func tagStatusesEqual(a, b []v1beta1.ImageTagStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Phase != y.Phase || x.Version != y.Version || x.Message != y.Message ||
			!x.CompletionTime.Equal(y.CompletionTime) || !x.StartTime.Equal(y.StartTime) {
			return false
		}
	}
	return true
}
