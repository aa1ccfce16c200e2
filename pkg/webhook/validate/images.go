package validate

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/imageref"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// ImagePullJobPath and ImageListPullJobPath are where the job webhooks
	// are served: OpenKruise's paths for its validating webhooks of the
	// same kinds.
	ImagePullJobPath     = "/validate-apps-kruise-io-imagepulljob"
	ImageListPullJobPath = "/validate-apps-kruise-io-imagelistpulljob"
	// ImagePullJobWebhookName and ImageListPullJobWebhookName name them in
	// the webhook server's metrics and logs.
	ImagePullJobWebhookName     = "imagepulljob-validate"
	ImageListPullJobWebhookName = "imagelistpulljob-validate"

	// ReasonInvalidImage: an image reference does not parse; the reason the
	// ImagePullJob controller fails such a job with.
	ReasonInvalidImage = "InvalidImage"
)

// ImagePullJobWebhook refuses a new ImagePullJob whose spec.image does not
// parse.
func ImagePullJobWebhook() server.Webhook {
	return server.Webhook{
		Name: ImagePullJobWebhookName, Path: ImagePullJobPath, Reasons: []string{ReasonInvalidImage},
		Admitter: server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
			if !judged(req, "imagepulljobs") {
				return server.Allowed()
			}
			job := &appsv1beta1.ImagePullJob{}
			if err := decode(req, job); err != nil {
				return unchecked(ctx, "the ImagePullJob", err)
			}
			errs := checkImage(field.NewPath("spec", "image"), job.Spec.Image)
			if len(errs) == 0 {
				return server.Allowed()
			}
			return invalid(ReasonInvalidImage, "ImagePullJob", &job.ObjectMeta, errs)
		}),
	}
}

// ImageListPullJobWebhook refuses a new ImageListPullJob with an image
// reference in spec.images that does not parse; every such image is named.
func ImageListPullJobWebhook() server.Webhook {
	return server.Webhook{
		Name: ImageListPullJobWebhookName, Path: ImageListPullJobPath, Reasons: []string{ReasonInvalidImage},
		Admitter: server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
			if !judged(req, "imagelistpulljobs") {
				return server.Allowed()
			}
			job := &appsv1beta1.ImageListPullJob{}
			if err := decode(req, job); err != nil {
				return unchecked(ctx, "the ImageListPullJob", err)
			}
			var errs field.ErrorList
			for i, image := range job.Spec.Images {
				errs = append(errs, checkImage(field.NewPath("spec", "images").Index(i), image)...)
			}
			if len(errs) == 0 {
				return server.Allowed()
			}
			return invalid(ReasonInvalidImage, "ImageListPullJob", &job.ObjectMeta, errs)
		}),
	}
}

// checkImage parses image as the ImagePullJob controller does before it
// hands the image to the nodes (imageref.Split). An empty one is left to the
// schema, which refuses it with its own message.
func checkImage(path *field.Path, image string) field.ErrorList {
	if image == "" {
		return nil
	}
	if _, _, err := imageref.Split(image); err != nil {
		return field.ErrorList{field.Invalid(path, image, err.Error())}
	}
	return nil
}
