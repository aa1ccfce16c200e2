package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestImageListPullJobSetters(t *testing.T) {
	images := []string{"a:1", "b:2"}
	j := ImageListPullJob("list", SetImageListPullJobNamespace("ns"), SetImageListPullJobUID("u"), SetImageListPullJobImages(images...),
		SetImageListPullJobPullSecrets("s"), SetImageListPullJobParallelism(intstr.FromInt32(3)),
		SetImageListPullJobActiveDeadlineSeconds(900), SetImageListPullJobTTLSecondsAfterFinished(60))
	images[0] = "changed"
	assert.Equal(t, []string{"a:1", "b:2"}, j.Spec.Images, "the images are copied")
	assert.Equal(t, "ns", j.Namespace)
	assert.EqualValues(t, "u", j.UID)
	assert.Equal(t, []string{"s"}, j.Spec.PullSecrets)
	assert.Equal(t, intstr.FromInt32(3), *j.Spec.Parallelism)
	assert.Equal(t, int64(900), *j.Spec.CompletionPolicy.ActiveDeadlineSeconds)
	assert.Equal(t, int32(60), *j.Spec.CompletionPolicy.TTLSecondsAfterFinished)
}
