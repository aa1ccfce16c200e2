package pull

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func randomSuffix() string { return utilrand.String(5) }

// notNameChars are the characters an object name cannot hold.
var notNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// jobName is pull-<last path element of the image's repository>-<suffix>.
func jobName(image, suffix string) string {
	repo := image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		repo = repo[i+1:]
	}
	if i := strings.Index(repo, ":"); i >= 0 {
		repo = repo[:i]
	}
	base := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(repo), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	if base == "" {
		base = "image"
	}
	return "pull-" + base + "-" + suffix
}

// job is the ImagePullJob the flags describe. It completes once every
// selected node has finished (completionPolicy Always), so --wait ends.
func (o *Options) job() (*appsv1beta1.ImagePullJob, error) {
	name := o.Name
	if name == "" {
		name = jobName(o.Image, o.suffix())
	}
	job := &appsv1beta1.ImagePullJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "ImagePullJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: o.Image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				PullSecrets:      o.PullSecrets,
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
			},
		},
	}
	spec := &job.Spec.ImagePullJobTemplate
	switch {
	case len(o.Nodes) > 0:
		spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: o.Nodes}
	case o.Selector != "":
		selector, err := metav1.ParseToLabelSelector(o.Selector)
		if err != nil {
			return nil, fmt.Errorf("--selector %q is not a label selector: %w", o.Selector, err)
		}
		spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: *selector}
	}
	parallelism := o.Parallelism
	if parallelism == 0 && len(o.Nodes) > 0 {
		parallelism = int32(len(o.Nodes))
	}
	if parallelism > 0 {
		p := intstr.FromInt32(parallelism)
		spec.Parallelism = &p
	}
	if o.PullTimeout > 0 || o.BackoffLimit >= 0 {
		spec.PullPolicy = &appsv1beta1.PullPolicy{}
		if o.PullTimeout > 0 {
			seconds := int32(max(o.PullTimeout.Seconds(), 1))
			spec.PullPolicy.TimeoutSeconds = &seconds
		}
		if o.BackoffLimit >= 0 {
			spec.PullPolicy.BackoffLimit = &o.BackoffLimit
		}
	}
	if o.Always {
		spec.ImagePullPolicy = appsv1beta1.PullAlways
	}
	if o.TTL >= 0 {
		seconds := int32(o.TTL.Seconds())
		spec.CompletionPolicy.TTLSecondsAfterFinished = &seconds
	}
	return job, nil
}
