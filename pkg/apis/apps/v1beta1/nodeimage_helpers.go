package v1beta1

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
