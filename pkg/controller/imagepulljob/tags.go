package imagepulljob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Reading the tag entries of a NodeImage (spec and status).

// tagKey names a tag of an image: repo + "\x00" + tag.
func tagKey(repo, tag string) string { return repo + "\x00" + tag }

// isJobRef reports whether an owner reference names an ImagePullJob (of any
// apps.kruise.io version: OpenKruise wrote v1alpha1).
func isJobRef(ref corev1.ObjectReference) bool {
	return ref.Kind == "ImagePullJob" && (ref.APIVersion == v1beta1.SchemeGroupVersion.String() || ref.APIVersion == "apps.kruise.io/v1alpha1")
}

// hasOwner reports whether the job uid owns the tag entry t.
func hasOwner(t *v1beta1.ImageTagSpec, uid types.UID) bool {
	for _, r := range t.OwnerReferences {
		if isJobRef(r) && r.UID == uid {
			return true
		}
	}
	return false
}

// findStatus is the status of version of repo:tag on ni, nil when the
// daemon has reported none.
func findStatus(ni *v1beta1.NodeImage, repo, tag string, version int64) *v1beta1.ImageTagStatus {
	st, ok := ni.Status.ImageStatuses[repo]
	if !ok {
		return nil
	}
	for i := range st.Tags {
		if st.Tags[i].Tag == tag && st.Tags[i].Version == version {
			return &st.Tags[i]
		}
	}
	return nil
}
