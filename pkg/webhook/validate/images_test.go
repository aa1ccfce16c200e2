package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func pullJob(image string) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: ns},
		Spec:       appsv1beta1.ImagePullJobSpec{Image: image},
	}
}

func listJob(images ...string) *appsv1beta1.ImageListPullJob {
	return &appsv1beta1.ImageListPullJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "list", Namespace: ns},
		Spec:       appsv1beta1.ImageListPullJobSpec{Images: images},
	}
}

func TestImagePullJobWebhook(t *testing.T) {
	tests := []struct {
		name    string
		req     func(t *testing.T) *admissionv1.AdmissionRequest
		message []string // nil: admitted
	}{
		{name: "plain name", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob("busybox"))
		}},
		{name: "registry with port, tag", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob("127.0.0.1:5000/public/busybox:1.35"))
		}},
		{name: "digest", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob",
				pullJob("busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
		}},
		{name: "empty: the schema's", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob(""))
		}},
		{name: "upper case", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob("127.0.0.1:5000/Public/Busybox:1.35"))
		}, message: []string{`ImagePullJob.apps.kruise.io "pull" is invalid: spec.image: Invalid value: "127.0.0.1:5000/Public/Busybox:1.35": ` +
			`invalid image reference "127.0.0.1:5000/Public/Busybox:1.35"`}},
		{name: "space", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob("busy box:1"))
		}, message: []string{`spec.image: Invalid value: "busy box:1": invalid image reference "busy box:1"`}},
		{name: "short digest", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob("busybox@sha256:abc"))
		}, message: []string{`invalid image reference "busybox@sha256:abc"`}},
		{name: "bad path component", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			return request(t, "imagepulljobs", "ImagePullJob", pullJob("registry.example/app/"))
		}, message: []string{`invalid image reference "registry.example/app/": bad repository path component ""`}},
		{name: "v1alpha1", req: func(t *testing.T) *admissionv1.AdmissionRequest {
			j := &appsv1alpha1.ImagePullJob{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob"},
				ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns},
				Spec:       appsv1alpha1.ImagePullJobSpec{Image: "Busybox"},
			}
			return request(t, "imagepulljobs", "ImagePullJob", j, "v1alpha1")
		}, message: []string{`ImagePullJob.apps.kruise.io "old" is invalid: spec.image: Invalid value: "Busybox": invalid image reference "Busybox"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, ImagePullJobWebhook())
			resp := s.send(t, tc.req(t))
			if tc.message == nil {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			denied(t, resp, tc.message...)
			assert.EqualValues(t, 1, s.rejections(t, ReasonInvalidImage))
		})
	}
}

func TestImageListPullJobWebhookNamesEveryBadImage(t *testing.T) {
	s := serve(t, ImageListPullJobWebhook())
	resp := s.send(t, request(t, "imagelistpulljobs", "ImageListPullJob", listJob("busybox:1.35", "Not Valid", "nginx", "busybox@sha256:abc")))
	denied(t, resp, `ImageListPullJob.apps.kruise.io "list" is invalid: [`,
		`spec.images[1]: Invalid value: "Not Valid": invalid image reference "Not Valid"`,
		`spec.images[3]: Invalid value: "busybox@sha256:abc": invalid image reference "busybox@sha256:abc"`)
	assert.NotContains(t, resp.Result.Message, "spec.images[0]")
	assert.EqualValues(t, 1, s.rejections(t, ReasonInvalidImage))

	ok := s.send(t, request(t, "imagelistpulljobs", "ImageListPullJob", listJob("busybox:1.35", "127.0.0.1:5000/public/nginx")))
	assert.True(t, ok.Allowed)
}

func TestJobWebhooksLeaveOtherRequestsAlone(t *testing.T) {
	pull := serve(t, ImagePullJobWebhook())
	update := request(t, "imagepulljobs", "ImagePullJob", pullJob("Bad Image"))
	update.Operation = admissionv1.Update
	assert.True(t, pull.send(t, update).Allowed, "updates are not judged")
	wrongResource := request(t, "imagelistpulljobs", "ImageListPullJob", listJob("Bad Image"))
	assert.True(t, pull.send(t, wrongResource).Allowed, "another kind sent by a wrong configuration")
	undecodable := request(t, "imagepulljobs", "ImagePullJob", pullJob("busybox"))
	undecodable.Object.Raw = []byte(`{"spec":{"image":["a"]}}`)
	resp := pull.send(t, undecodable)
	assert.True(t, resp.Allowed, "never refused for the webhook's own failure")
	assert.Len(t, resp.Warnings, 1)

	list := serve(t, ImageListPullJobWebhook())
	status := request(t, "imagelistpulljobs", "ImageListPullJob", listJob("Bad Image"))
	status.SubResource = "status"
	assert.True(t, list.send(t, status).Allowed)
}
