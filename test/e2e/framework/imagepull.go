package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// The image pull contract, spelled out here rather than imported from the product so that a
// renamed constant shows up as a failing test.
const (
	// DaemonConfigNamespace is where kruise-controller keeps the copies of pull secrets.
	DaemonConfigNamespace = "kruise-daemon-config"
	// PullSecretCopyLabel marks the copies (value "true").
	PullSecretCopyLabel = "apps.kruise.io/pull-secret-copy"
	// PullSecretSourceNamespace and PullSecretSourceName say which secret a copy copies.
	PullSecretSourceNamespace = "apps.kruise.io/source-secret-namespace"
	PullSecretSourceName      = "apps.kruise.io/source-secret-name"
	// PullingImageByAnnotation is the sandbox annotation kruise-daemon adds to every pull.
	PullingImageByAnnotation = "apps.kruise.io/pulling-image-by"
	PullingImageByValue      = "kruise-daemon"
	// ImageListPullJobLabel names the ImageListPullJob on its ImagePullJobs.
	ImageListPullJobLabel = "apps.kruise.io/image-list-pull-job"
)

// NewImagePullJob returns a v1beta1 ImagePullJob of image on the real node only (fake nodes of
// other tests are never picked), completing (Always) with a short per-pull timeout and one retry.
func NewImagePullJob(namespace, name, image string) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				Selector:         &appsv1beta1.ImagePullJobNodeSelector{Names: []string{NodeName()}},
				PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](300)},
			},
		},
	}
}

// CreateImagePullJob creates job and returns the server's copy.
func CreateImagePullJob(ctx context.Context, t testing.TB, c versioned.Interface, job *appsv1beta1.ImagePullJob) *appsv1beta1.ImagePullJob {
	t.Helper()
	got, err := c.AppsV1beta1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ImagePullJob %s/%s: %v", job.Namespace, job.Name, err)
	}
	return got
}

// WaitImagePullJobFinished waits until the job has a completionTime and returns it.
func WaitImagePullJobFinished(ctx context.Context, t testing.TB, c versioned.Interface, namespace, name string, timeout time.Duration) *appsv1beta1.ImagePullJob {
	t.Helper()
	var got *appsv1beta1.ImagePullJob
	WaitFor(ctx, t, timeout, fmt.Sprintf("ImagePullJob %s/%s finished", namespace, name), func(ctx context.Context) (bool, string, error) {
		job, err := c.AppsV1beta1().ImagePullJobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = job
		return job.Status.CompletionTime != nil, DescribeImagePullJob(ctx, c, job), nil
	})
	return got
}

// DescribeImagePullJob summarises the job's status and what the NodeImages say of its image, for
// failure messages.
func DescribeImagePullJob(ctx context.Context, c versioned.Interface, job *appsv1beta1.ImagePullJob) string {
	s := job.Status
	completed := "<nil>"
	if s.CompletionTime != nil {
		completed = s.CompletionTime.UTC().Format(time.RFC3339)
	}
	out := fmt.Sprintf("job %s/%s image %s: desired=%d active=%d succeeded=%d failed=%d failedNodes=%v completionTime=%s message=%q",
		job.Namespace, job.Name, job.Spec.Image, s.Desired, s.Active, s.Succeeded, s.Failed, s.FailedNodes, completed, s.Message)
	list, err := c.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out + "; listing NodeImages: " + err.Error()
	}
	repo, tag := SplitImage(job.Spec.Image)
	for i := range list.Items {
		if d := DescribeNodeImageTag(&list.Items[i], repo, tag); d != "" {
			out += "; " + d
		}
	}
	return out
}
