package imagelistpulljob

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/imagepulljob"
)

// ChildName is the name of the list job's ImagePullJob for image: the list
// job's name (shortened if needed) and 10 hex digits of the image's
// SHA-256, at most 253 characters.
func ChildName(list, image string) string {
	sum := sha256.Sum256([]byte(image))
	suffix := "-" + hex.EncodeToString(sum[:5])
	if len(list)+len(suffix) > 253 {
		list = list[:253-len(suffix)]
	}
	return list + suffix
}

// newChild is the ImagePullJob for image: the list job's template, with no
// ttl of its own (the list job's ttl deletes it, through the garbage
// collector, once the aggregate is final), and a pull timeout no longer than
// the deadline (see fitTimeout). The note, empty or not, says what was
// lowered, for the Event that reports the creation.
func newChild(list *v1beta1.ImageListPullJob, image string) (*v1beta1.ImagePullJob, string) {
	tmpl := *list.Spec.ImagePullJobTemplate.DeepCopy()
	tmpl.CompletionPolicy.TTLSecondsAfterFinished = nil
	note := fitTimeout(&tmpl)
	return &v1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ChildName(list.Name, image),
			Namespace: list.Namespace,
			Labels:    childLabels(list),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(list,
				v1beta1.SchemeGroupVersion.WithKind(kind))},
		},
		Spec: v1beta1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: tmpl},
	}, note
}

// fitTimeout lowers tmpl's pull timeout to its activeDeadlineSeconds when
// the deadline is the shorter. An ImagePullJob's deadline may not be shorter
// than its timeout (the API server refuses it, as OpenKruise's webhook
// does), but an ImageListPullJob's may (OpenKruise has no such rule there):
// copied as it is, every ImagePullJob of the list would be refused and the
// list would never run. No pull can outlast the deadline anyway, so the
// lowered timeout changes nothing the list job asked for. It returns a note
// for the creation Event when it lowered the timeout, "" otherwise.
func fitTimeout(tmpl *v1beta1.ImagePullJobTemplate) string {
	ads := tmpl.CompletionPolicy.ActiveDeadlineSeconds
	if ads == nil || tmpl.CompletionPolicy.Type == v1beta1.Never {
		return ""
	}
	timeout := imagepulljob.DefaultTimeoutSeconds
	if tmpl.PullPolicy != nil && tmpl.PullPolicy.TimeoutSeconds != nil {
		timeout = *tmpl.PullPolicy.TimeoutSeconds
	}
	if int64(timeout) <= *ads {
		return ""
	}
	if tmpl.PullPolicy == nil {
		tmpl.PullPolicy = &v1beta1.PullPolicy{}
	}
	// ads < timeout, an int32: it fits.
	tmpl.PullPolicy.TimeoutSeconds = ptr.To(int32(*ads))
	return fmt.Sprintf(" (pullPolicy.timeoutSeconds %d lowered to completionPolicy.activeDeadlineSeconds %d)", timeout, *ads)
}

// listJobLabel names a child's list job, for users' selectors (children
// are found by their owner reference).
const listJobLabel = "apps.kruise.io/image-list-pull-job"

// childLabels labels a child with its list job's name, unless that name (up
// to 253 characters) cannot be a label value: the child is then created
// without the label rather than never.
func childLabels(list *v1beta1.ImageListPullJob) map[string]string {
	if len(validation.IsValidLabelValue(list.Name)) > 0 {
		return nil
	}
	return map[string]string{listJobLabel: list.Name}
}
