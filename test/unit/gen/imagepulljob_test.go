package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The node selector setters replace each other: a job selects its nodes by
// names or by labels.
func TestImagePullJobNodeSelectorSetters(t *testing.T) {
	j := ImagePullJob("j", SetImagePullJobNodeSelector(map[string]string{"pool": "a"}), SetImagePullJobNodeNames("n1", "n2"))
	assert.Equal(t, &appsv1beta1.ImagePullJobNodeSelector{Names: []string{"n1", "n2"}}, j.Spec.Selector)
	j = ImagePullJob("j", SetImagePullJobNodeNames("n1"), SetImagePullJobNodeSelector(map[string]string{"pool": "a"}))
	assert.Equal(t, &appsv1beta1.ImagePullJobNodeSelector{
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
	}, j.Spec.Selector)
	assert.Nil(t, ImagePullJob("j").Spec.Selector, "no selector: all nodes")
}

// The completion policy setters each set one field and keep the others.
func TestImagePullJobCompletionPolicySettersCompose(t *testing.T) {
	j := ImagePullJob("j", SetImagePullJobActiveDeadlineSeconds(900), SetImagePullJobCompletionType(appsv1beta1.Never),
		SetImagePullJobTTLSecondsAfterFinished(60))
	assert.Equal(t, appsv1beta1.CompletionPolicy{
		Type: appsv1beta1.Never, ActiveDeadlineSeconds: ptr.To(int64(900)), TTLSecondsAfterFinished: ptr.To(int32(60)),
	}, j.Spec.CompletionPolicy)
}

func TestImagePullJobSpecSetters(t *testing.T) {
	labels := map[string]string{"k": "v"}
	j := ImagePullJob("j", SetImagePullJobParallelism(intstr.FromString("40%")), SetImagePullJobSandboxLabels(labels),
		SetImagePullJobImagePullPolicy(appsv1beta1.PullAlways),
		SetImagePullJobPullPolicy(appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To(int32(300)), BackoffLimit: ptr.To(int32(1))}))
	require.NotNil(t, j.Spec.Parallelism)
	assert.Equal(t, intstr.FromString("40%"), *j.Spec.Parallelism)
	assert.Equal(t, &appsv1beta1.SandboxConfig{Labels: map[string]string{"k": "v"}}, j.Spec.SandboxConfig)
	j.Spec.SandboxConfig.Labels["k"] = "x"
	assert.Equal(t, map[string]string{"k": "v"}, labels, "the caller's map is not shared")
	assert.Equal(t, appsv1beta1.PullAlways, j.Spec.ImagePullPolicy)
	assert.Equal(t, &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To(int32(300)), BackoffLimit: ptr.To(int32(1))}, j.Spec.PullPolicy)
}
