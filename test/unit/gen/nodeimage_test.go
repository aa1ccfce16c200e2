package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The per-image setters change one field of one image's spec and keep the
// rest.
func TestNodeImageImageSetters(t *testing.T) {
	ref := appsv1beta1.ReferenceObject{Namespace: "kruise-daemon-config", Name: "regcred"}
	sandbox := &appsv1beta1.SandboxConfig{Labels: map[string]string{"team": "a"}}
	ni := NodeImage("node-a",
		AddNodeImageTags("app", appsv1beta1.ImageTagSpec{Tag: "v1"}),
		SetNodeImagePullSecrets("app", ref),
		AddNodeImageTags("app", appsv1beta1.ImageTagSpec{Tag: "v2"}),
		SetNodeImageSandboxConfig("app", sandbox),
		AddNodeImageTags("other", appsv1beta1.ImageTagSpec{Tag: "x"}))
	assert.Equal(t, map[string]appsv1beta1.ImageSpec{
		"app": {
			Tags:          []appsv1beta1.ImageTagSpec{{Tag: "v1"}, {Tag: "v2"}},
			PullSecrets:   []appsv1beta1.ReferenceObject{ref},
			SandboxConfig: sandbox,
		},
		"other": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "x"}}},
	}, ni.Spec.Images)
	assert.Nil(t, NodeImage("node-a").Spec.Images)
}

func TestNodeImageFromLeavesTheBaseAlone(t *testing.T) {
	base := NodeImage("node-a", SetNodeImageLabels(map[string]string{"pool": "a"}), AddNodeImageTags("app", appsv1beta1.ImageTagSpec{Tag: "v1"}))
	ni := NodeImageFrom(base, SetNodeImageLabels(map[string]string{"pool": "b"}), AddNodeImageTags("app", appsv1beta1.ImageTagSpec{Tag: "v2"}))
	assert.Equal(t, map[string]string{"pool": "b"}, ni.Labels)
	assert.Equal(t, []appsv1beta1.ImageTagSpec{{Tag: "v1"}, {Tag: "v2"}}, ni.Spec.Images["app"].Tags)
	assert.Equal(t, map[string]string{"pool": "a"}, base.Labels)
	assert.Equal(t, []appsv1beta1.ImageTagSpec{{Tag: "v1"}}, base.Spec.Images["app"].Tags)
}
