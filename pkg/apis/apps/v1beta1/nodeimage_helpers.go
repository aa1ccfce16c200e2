package v1beta1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TagSpec returns the spec entry for repo and tag, or nil.
func (ni *NodeImage) TagSpec(repo, tag string) *ImageTagSpec {
	img, ok := ni.Spec.Images[repo]
	if !ok {
		return nil
	}
	for i := range img.Tags {
		if img.Tags[i].Tag == tag {
			return &img.Tags[i]
		}
	}
	return nil
}

// StatusMergePatch is the JSON merge patch of a NodeImage's status from
// written (nil: unknown) to desired, as a daemon sends it: the counters, the
// image entries that changed (null for removed ones) and firstSyncStatus when
// it changed. Sending only what changed keeps each write small on a node with
// many images.
func StatusMergePatch(written, desired *NodeImageStatus) ([]byte, error) {
	st := map[string]any{
		"desired":   desired.Desired,
		"succeeded": desired.Succeeded,
		"failed":    desired.Failed,
		"pulling":   desired.Pulling,
		"waiting":   desired.Waiting,
	}
	var old map[string]ImageStatus
	if written != nil {
		old = written.ImageStatuses
	}
	images := map[string]any{}
	for repo, is := range desired.ImageStatuses {
		if prev, ok := old[repo]; !ok || !equality.Semantic.DeepEqual(prev, is) {
			images[repo] = is
		}
	}
	for repo := range old {
		if _, ok := desired.ImageStatuses[repo]; !ok {
			images[repo] = nil
		}
	}
	if len(images) > 0 {
		st["imageStatuses"] = images
	}
	if written == nil || !equality.Semantic.DeepEqual(written.FirstSyncStatus, desired.FirstSyncStatus) {
		st["firstSyncStatus"] = desired.FirstSyncStatus
	}
	return json.Marshal(map[string]any{"status": st})
}
