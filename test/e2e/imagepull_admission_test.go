//go:build e2e

package e2e

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// An ImagePullJob or ImageListPullJob whose image reference does not parse is refused at create
// by kruise's validating webhooks, naming the image and why, in either API version; valid ones are
// admitted (dry run: nothing is pulled).
func TestImagePullJobsWithAnUnparsableImageAreRefused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "pull-admission")
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	_, err := kc.AppsV1beta1().ImagePullJobs(ns).Create(ctx, framework.NewImagePullJob(ns, "bad", "Busybox:1.35"), metav1.CreateOptions{})
	requireWebhookRefusal(t, err, "vimagepulljob-v1beta1.kb.io", `ImagePullJob.apps.kruise.io "bad" is invalid`,
		`spec.image: Invalid value: "Busybox:1.35": invalid image reference "Busybox:1.35"`)
	old := &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-v1alpha1", Namespace: ns},
		Spec: appsv1alpha1.ImagePullJobSpec{Image: "busy box", ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
			CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always},
		}},
	}
	_, err = kc.AppsV1alpha1().ImagePullJobs(ns).Create(ctx, old, metav1.CreateOptions{})
	requireWebhookRefusal(t, err, "vimagepulljob-v1beta1.kb.io", `invalid image reference "busy box"`)
	if _, err := kc.AppsV1beta1().ImagePullJobs(ns).Create(ctx, framework.NewImagePullJob(ns, "good", f.Image("public/busybox:1.35")), dryRun); err != nil {
		t.Errorf("a valid ImagePullJob was refused: %v", err)
	}

	list := &appsv1beta1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-list", Namespace: ns},
		Spec: appsv1beta1.ImageListPullJobSpec{
			Images: []string{f.Image("public/busybox:1.35"), "busybox@sha256:abc", "Not Valid"},
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				Selector:         &appsv1beta1.ImagePullJobNodeSelector{Names: []string{framework.NodeName()}},
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
			},
		},
	}
	_, err = kc.AppsV1beta1().ImageListPullJobs(ns).Create(ctx, list, metav1.CreateOptions{})
	requireWebhookRefusal(t, err, "vimagelistpulljob-v1beta1.kb.io", `ImageListPullJob.apps.kruise.io "bad-list" is invalid`,
		`spec.images[1]: Invalid value: "busybox@sha256:abc": invalid image reference "busybox@sha256:abc"`,
		`spec.images[2]: Invalid value: "Not Valid": invalid image reference "Not Valid"`)
	list.Name, list.Spec.Images = "good-list", list.Spec.Images[:1]
	if _, err := kc.AppsV1beta1().ImageListPullJobs(ns).Create(ctx, list, dryRun); err != nil {
		t.Errorf("a valid ImageListPullJob was refused: %v", err)
	}
}
