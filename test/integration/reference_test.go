package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// verdict is what the API server must answer to one object: "" accepts it,
// anything else is a text its refusal must contain.
type verdict string

const accepted verdict = ""

// jobVerdicts is the answer for each of the four ways to write an image
// job template: ImagePullJob and ImageListPullJob, each as v1beta1 and as
// v1alpha1.
type jobVerdicts struct{ pullJob, listJob verdict }

// createJobs writes tmpl as an ImagePullJob and an ImageListPullJob, each in
// both versions, and checks the API server's answers.
func createJobs(t *testing.T, c *cluster, name string, tmpl v1beta1.ImagePullJobTemplate, want jobVerdicts) {
	t.Helper()
	check := func(t *testing.T, err error, want verdict) {
		t.Helper()
		if want == accepted {
			require.NoError(t, err)
			return
		}
		requireInvalid(t, err, string(want))
	}
	job := &v1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.ImagePullJobSpec{Image: "registry.example/app:v1", ImagePullJobTemplate: *tmpl.DeepCopy()},
	}
	list := &v1beta1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.ImageListPullJobSpec{Images: []string{"registry.example/app:v1"}, ImagePullJobTemplate: *tmpl.DeepCopy()},
	}
	t.Run("ImagePullJob/v1beta1", func(t *testing.T) {
		_, err := c.kruise.AppsV1beta1().ImagePullJobs(ns).Create(ctx(t), job, metav1.CreateOptions{})
		check(t, err, want.pullJob)
	})
	t.Run("ImagePullJob/v1alpha1", func(t *testing.T) {
		alpha := v1alpha1.ImagePullJobFromV1beta1(job)
		alpha.Name += "-alpha"
		_, err := c.kruise.AppsV1alpha1().ImagePullJobs(ns).Create(ctx(t), alpha, metav1.CreateOptions{})
		check(t, err, want.pullJob)
	})
	t.Run("ImageListPullJob/v1beta1", func(t *testing.T) {
		_, err := c.kruise.AppsV1beta1().ImageListPullJobs(ns).Create(ctx(t), list, metav1.CreateOptions{})
		check(t, err, want.listJob)
	})
	t.Run("ImageListPullJob/v1alpha1", func(t *testing.T) {
		alpha := v1alpha1.ImageListPullJobFromV1beta1(list)
		alpha.Name += "-alpha"
		_, err := c.kruise.AppsV1alpha1().ImageListPullJobs(ns).Create(ctx(t), alpha, metav1.CreateOptions{})
		check(t, err, want.listJob)
	})
}

// testReferenceRules: the API server admits what OpenKruise v1.9.0's
// admission admits, and refuses what it refuses, wherever a rule of ours
// and one of the reference's meet (docs/api.md, "Validation compared with
// OpenKruise").
func testReferenceRules(t *testing.T, c *cluster) {
	deadline := func(timeout *int32, ads int64) v1beta1.ImagePullJobTemplate {
		tmpl := v1beta1.ImagePullJobTemplate{CompletionPolicy: v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To(ads)}}
		if timeout != nil {
			tmpl.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: timeout}
		}
		return tmpl
	}
	const tooShort verdict = "completionPolicy.activeDeadlineSeconds must be at least pullPolicy.timeoutSeconds (default 600)"
	for _, tc := range []struct {
		name string
		tmpl v1beta1.ImagePullJobTemplate
		want jobVerdicts
	}{
		// OpenKruise refuses an ImagePullJob whose timeout is greater than
		// its deadline; a deadline equal to the timeout is admitted.
		{"deadline-equal-to-timeout", deadline(ptr.To[int32](50), 50), jobVerdicts{accepted, accepted}},
		{"deadline-equal-to-default-timeout", deadline(nil, 600), jobVerdicts{accepted, accepted}},
		// It has no such rule on an ImageListPullJob: kruise lowers the
		// timeout of the list's ImagePullJobs to the deadline.
		{"deadline-below-timeout", deadline(ptr.To[int32](60), 59), jobVerdicts{tooShort, accepted}},
		{"deadline-below-default-timeout", deadline(nil, 30), jobVerdicts{tooShort, accepted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createJobs(t, c, "ref-"+strings.ToLower(tc.name), tc.tmpl, tc.want)
		})
	}

	// Values below a field's sensible range that OpenKruise admits (it
	// bounds none of these): kruise admits them too, reads them in a defined
	// way and warns (kruise-api-warnings, see warnings_test.go).
	for _, tc := range []struct {
		name string
		tmpl v1beta1.ImagePullJobTemplate
		want jobVerdicts
	}{
		{"timeout-zero", v1beta1.ImagePullJobTemplate{PullPolicy: &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0)}}, jobVerdicts{accepted, accepted}},
		{"timeout-negative", v1beta1.ImagePullJobTemplate{PullPolicy: &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](-5)}}, jobVerdicts{accepted, accepted}},
		{"backoff-negative", v1beta1.ImagePullJobTemplate{PullPolicy: &v1beta1.PullPolicy{BackoffLimit: ptr.To[int32](-1)}}, jobVerdicts{accepted, accepted}},
		{"ttl-negative", v1beta1.ImagePullJobTemplate{CompletionPolicy: v1beta1.CompletionPolicy{TTLSecondsAfterFinished: ptr.To[int32](-1)}}, jobVerdicts{accepted, accepted}},
		// A deadline below 1: on an ImagePullJob only with a timeout no
		// greater (OpenKruise compares them), on a list job always.
		{"deadline-zero-timeout-zero", v1beta1.ImagePullJobTemplate{PullPolicy: &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0)},
			CompletionPolicy: v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To[int64](0)}}, jobVerdicts{accepted, accepted}},
		{"deadline-negative", deadline(nil, -5), jobVerdicts{tooShort, accepted}},
		// OpenKruise takes any imagePullPolicy (anything but IfNotPresent
		// pulls every time).
		{"imagepullpolicy-never", v1beta1.ImagePullJobTemplate{ImagePullPolicy: "Never"}, jobVerdicts{accepted, accepted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createJobs(t, c, "ref-"+tc.name, tc.tmpl, tc.want)
		})
	}
	t.Run("NodeImage-tag-values-below-range", func(t *testing.T) {
		ni := &v1beta1.NodeImage{
			ObjectMeta: metav1.ObjectMeta{Name: "ref-below-range"},
			Spec: v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{"registry.example/app": {Tags: []v1beta1.ImageTagSpec{{
				Tag: "v1", ImagePullPolicy: "Sometimes", PullPolicy: &v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](0),
					BackoffLimit: ptr.To[int32](-1), TTLSecondsAfterFinished: ptr.To[int32](-1), ActiveDeadlineSeconds: ptr.To[int64](0)},
			}}}}},
		}
		_, err := c.kruise.AppsV1beta1().NodeImages().Create(ctx(t), ni, metav1.CreateOptions{})
		require.NoError(t, err)
		alpha := v1alpha1.NodeImageFromV1beta1(ni)
		alpha.Name += "-alpha"
		_, err = c.kruise.AppsV1alpha1().NodeImages().Create(ctx(t), alpha, metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("ContainerRecreateRequest-values-below-range", func(t *testing.T) {
		crr := newCRR("ref-below-range")
		crr.Spec.Strategy = &v1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: -1}
		crr.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1)
		_, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx(t), crr, metav1.CreateOptions{})
		require.NoError(t, err)
	})

	// A CRR names up to 1024 containers (OpenKruise has no bound; the CEL
	// rules need one, far beyond any real pod).
	t.Run("ContainerRecreateRequest-containers-bound", func(t *testing.T) {
		crr := newCRR("ref-many-containers")
		crr.Spec.Containers = nil
		for i := range v1alpha1.MaxContainersPerRequest {
			crr.Spec.Containers = append(crr.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: fmt.Sprintf("c%d", i)})
		}
		_, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx(t), crr, metav1.CreateOptions{})
		require.NoError(t, err)
		crr.Name = "ref-too-many-containers"
		crr.Spec.Containers = append(crr.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: "one-more"})
		_, err = c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx(t), crr, metav1.CreateOptions{})
		requireInvalid(t, err, "spec.containers: Too many: 1025: must have at most 1024 items")
	})

	// parallelism as a string: OpenKruise takes what strconv.ParseInt(s,
	// 10, 32) reads as a number of at least 0 (a sign, leading zeros, ten
	// digits), and refuses a percentage.
	const badParallelism verdict = "parallelism must be a non-negative integer of at most 2147483647"
	for i, tc := range []struct {
		value string
		want  verdict
	}{
		{"5", accepted}, {"+5", accepted}, {"007", accepted}, {"0", accepted}, {"-0", accepted},
		{"2147483647", accepted}, {"000000000002147483647", accepted},
		{"2147483648", badParallelism}, {"99999999999999999999", badParallelism}, {"-1", badParallelism},
		{"50%", badParallelism}, {" 5", badParallelism}, {"5.0", badParallelism}, {"1e3", badParallelism},
		{"", badParallelism}, {"+", badParallelism}, {"-", badParallelism}, {"1_000", badParallelism},
	} {
		t.Run("parallelism="+tc.value, func(t *testing.T) {
			tmpl := v1beta1.ImagePullJobTemplate{Parallelism: ptr.To(intstr.FromString(tc.value))}
			createJobs(t, c, fmt.Sprintf("ref-parallelism-%d", i), tmpl, jobVerdicts{tc.want, tc.want})
		})
	}
}
