package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// key is a distinct sandbox key of exactly n characters.
func key(i, n int) string {
	k := fmt.Sprintf("example.com/k%d-", i)
	return k + strings.Repeat("x", n-len(k))
}

// atTheBounds is a sandbox config with every bound reached and none passed:
// 256 labels with 317-character keys and 63-character values (Kubernetes'
// longest label), and annotations filling the rest of 256 KiB.
func atTheBounds() *v1beta1.SandboxConfig {
	sb := &v1beta1.SandboxConfig{Labels: map[string]string{}, Annotations: map[string]string{}}
	used := 0
	for i := range v1beta1.MaxSandboxEntries {
		k := key(i, v1beta1.MaxSandboxKeyLength)
		sb.Labels[k] = strings.Repeat("v", 63)
		used += len(k) + 63
	}
	sb.Annotations["a"] = strings.Repeat("a", v1beta1.MaxSandboxSize-used-1)
	return sb
}

// testSharedObjectBounds: the API server refuses a job (either version,
// either kind) or a NodeImage past the bounds of what jobs write into the
// NodeImage every job on a node shares, and says which field; objects at
// the bounds are accepted.
func testSharedObjectBounds(t *testing.T, c *cluster) {
	cx := ctx(t)
	names := func(n, length int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("s%d-", i) + strings.Repeat("n", length-len(fmt.Sprintf("s%d-", i)))
		}
		return out
	}
	cases := []struct {
		name   string
		mutate func(*v1beta1.ImagePullJobTemplate)
		reject []string // "" = accepted
	}{
		{"at-the-bounds", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullSecrets = names(v1beta1.MaxPullSecretsPerJob, 253)
			tp.SandboxConfig = atTheBounds()
		}, nil},
		{"too-many-pull-secrets", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullSecrets = names(v1beta1.MaxPullSecretsPerJob+1, 10)
		}, []string{"spec.pullSecrets", "must have at most 128 items"}},
		{"pull-secret-name-too-long", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullSecrets = names(1, 254)
		}, []string{"spec.pullSecrets[0]", "may not be more than 253"}},
		{"too-many-labels", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.SandboxConfig = &v1beta1.SandboxConfig{Labels: map[string]string{}}
			for i := 0; i <= v1beta1.MaxSandboxEntries; i++ {
				tp.SandboxConfig.Labels[key(i, 20)] = "v"
			}
		}, []string{"spec.sandboxConfig.labels", "must have at most 256 items"}},
		{"too-many-annotations", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.SandboxConfig = &v1beta1.SandboxConfig{Annotations: map[string]string{}}
			for i := 0; i <= v1beta1.MaxSandboxEntries; i++ {
				tp.SandboxConfig.Annotations[key(i, 20)] = "v"
			}
		}, []string{"spec.sandboxConfig.annotations", "must have at most 256 items"}},
		{"label-key-too-long", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.SandboxConfig = &v1beta1.SandboxConfig{Labels: map[string]string{key(0, v1beta1.MaxSandboxKeyLength+1): "v"}}
		}, []string{"spec.sandboxConfig", "sandboxConfig.labels keys must be at most 317 characters"}},
		{"annotation-key-too-long", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.SandboxConfig = &v1beta1.SandboxConfig{Annotations: map[string]string{key(0, v1beta1.MaxSandboxKeyLength+1): "v"}}
		}, []string{"spec.sandboxConfig", "sandboxConfig.annotations keys must be at most 317 characters"}},
		{"sandbox-too-large", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.SandboxConfig = atTheBounds()
			tp.SandboxConfig.Annotations["b"] = ""
		}, []string{"spec.sandboxConfig", "must be at most 262144 characters in all"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(t *testing.T, err error) {
				if tc.reject == nil {
					require.NoError(t, err)
					return
				}
				for _, want := range tc.reject {
					requireInvalid(t, err, want)
				}
			}
			job := newJob("bounds-" + tc.name)
			tc.mutate(&job.Spec.ImagePullJobTemplate)
			t.Run("v1beta1", func(t *testing.T) {
				_, err := c.kruise.AppsV1beta1().ImagePullJobs(ns).Create(cx, job, metav1.CreateOptions{})
				check(t, err)
			})
			t.Run("v1alpha1", func(t *testing.T) {
				alpha := v1alpha1.ImagePullJobFromV1beta1(job)
				alpha.Name += "-alpha"
				_, err := c.kruise.AppsV1alpha1().ImagePullJobs(ns).Create(cx, alpha, metav1.CreateOptions{})
				check(t, err)
			})
			t.Run("ImageListPullJob", func(t *testing.T) {
				list := &v1beta1.ImageListPullJob{
					ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: ns},
					Spec:       v1beta1.ImageListPullJobSpec{Images: []string{"a:1"}, ImagePullJobTemplate: job.Spec.ImagePullJobTemplate},
				}
				_, err := c.kruise.AppsV1beta1().ImageListPullJobs(ns).Create(cx, list, metav1.CreateOptions{})
				check(t, err)
			})
		})
	}

	// NodeImage: tags per image, owners per tag, pull secrets per image,
	// and the same sandbox bounds.
	owner := func(i int) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: ns,
			Name: fmt.Sprintf("job-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}
	}
	niCases := []struct {
		name   string
		image  func() v1beta1.ImageSpec
		reject []string
	}{
		{"at-the-bounds", func() v1beta1.ImageSpec {
			img := v1beta1.ImageSpec{SandboxConfig: atTheBounds()}
			for i := range v1beta1.MaxTagsPerImage {
				img.Tags = append(img.Tags, v1beta1.ImageTagSpec{Tag: fmt.Sprintf("v%d", i)})
			}
			for i := range v1beta1.MaxOwnersPerTag {
				img.Tags[0].OwnerReferences = append(img.Tags[0].OwnerReferences, owner(i))
			}
			for i := range v1beta1.MaxPullSecretsPerImage {
				img.PullSecrets = append(img.PullSecrets, v1beta1.ReferenceObject{Namespace: v1beta1.DaemonConfigNamespace, Name: fmt.Sprintf("s%d", i)})
			}
			return img
		}, nil},
		{"too-many-tags", func() v1beta1.ImageSpec {
			var img v1beta1.ImageSpec
			for i := 0; i <= v1beta1.MaxTagsPerImage; i++ {
				img.Tags = append(img.Tags, v1beta1.ImageTagSpec{Tag: fmt.Sprintf("v%d", i)})
			}
			return img
		}, []string{"spec.images.registry.example/app.tags", "must have at most 256 items"}},
		{"too-many-owners", func() v1beta1.ImageSpec {
			img := v1beta1.ImageSpec{Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}}
			for i := 0; i <= v1beta1.MaxOwnersPerTag; i++ {
				img.Tags[0].OwnerReferences = append(img.Tags[0].OwnerReferences, owner(i))
			}
			return img
		}, []string{"spec.images.registry.example/app.tags[0].ownerReferences", "must have at most 1024 items"}},
		{"too-many-pull-secrets", func() v1beta1.ImageSpec {
			img := v1beta1.ImageSpec{Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}}
			for i := 0; i <= v1beta1.MaxPullSecretsPerImage; i++ {
				img.PullSecrets = append(img.PullSecrets, v1beta1.ReferenceObject{Namespace: v1beta1.DaemonConfigNamespace, Name: fmt.Sprintf("s%d", i)})
			}
			return img
		}, []string{"spec.images.registry.example/app.pullSecrets", "must have at most 256 items"}},
		{"sandbox-too-large", func() v1beta1.ImageSpec {
			img := v1beta1.ImageSpec{Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}, SandboxConfig: atTheBounds()}
			img.SandboxConfig.Annotations["b"] = ""
			return img
		}, []string{"spec.images[registry.example/app].sandboxConfig", "must be at most 262144 characters in all"}},
	}
	for _, tc := range niCases {
		t.Run("NodeImage/"+tc.name, func(t *testing.T) {
			ni := &v1beta1.NodeImage{
				ObjectMeta: metav1.ObjectMeta{Name: "bounds-" + tc.name},
				Spec:       v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{"registry.example/app": tc.image()}},
			}
			_, err := c.kruise.AppsV1beta1().NodeImages().Create(cx, ni, metav1.CreateOptions{})
			if tc.reject == nil {
				require.NoError(t, err)
				return
			}
			for _, want := range tc.reject {
				requireInvalid(t, err, want)
			}
		})
	}

	// The job's failure record is bounded too.
	job, err := c.kruise.AppsV1beta1().ImagePullJobs(ns).Create(cx, newJob("bounds-failures"), metav1.CreateOptions{})
	require.NoError(t, err)
	for i := 0; i <= v1beta1.MaxFailures; i++ {
		job.Status.Failures = append(job.Status.Failures, v1beta1.NodeFailure{Node: fmt.Sprintf("n%d", i), Reason: "NotFound", Message: "m"})
	}
	_, err = c.kruise.AppsV1beta1().ImagePullJobs(ns).UpdateStatus(cx, job, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.failures")
	job.Status.Failures, job.Status.OmittedFailures = job.Status.Failures[:v1beta1.MaxFailures], 1
	_, err = c.kruise.AppsV1beta1().ImagePullJobs(ns).UpdateStatus(cx, job, metav1.UpdateOptions{})
	require.NoError(t, err)
}
