package predownload

import (
	"hash/fnv"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Owner is the workload the jobs pull for.
type Owner struct {
	Object metav1.Object
	Kind   schema.GroupVersionKind
	// Selector and Template are the workload's pod selector and pod template.
	Selector *metav1.LabelSelector
	Template *corev1.PodTemplateSpec
}

// NewJob is the ImagePullJob that pulls ci's image on the nodes of owner's pods not yet at
// update. Like the reference's it carries the pod template's labels (objects a workload owns
// match its selector) and the revision's hash, and hands both, with the template's
// annotations, to the runtime as the sandbox metadata.
func NewJob(owner Owner, update *appsv1.ControllerRevision, ci ContainerImage, s Settings) *appsv1beta1.ImagePullJob {
	hash := update.Labels[revision.HashLabel]
	labels := maps.Clone(owner.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if hash != "" {
		labels[revision.HashLabel] = hash
	}
	// Pods name their revision in controller-revision-hash: by name (CloneSet, StatefulSet) or
	// by hash (DaemonSet, a CloneSet with short hashes).
	notUpdated := []string{update.Name}
	if hash != "" && hash != update.Name {
		notUpdated = append(notUpdated, hash)
	}
	selector := owner.Selector.DeepCopy()
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: notUpdated,
	})
	var secrets []string
	for _, s := range owner.Template.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	parallelism := intstr.FromInt32(s.Parallelism)
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:            JobName(update.Name, ci.Container),
			Namespace:       owner.Object.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner.Object, owner.Kind)},
		},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: ci.Image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				PullSecrets: secrets,
				PodSelector: &appsv1beta1.ImagePullJobPodSelector{LabelSelector: *selector},
				Parallelism: &parallelism,
				PullPolicy: &appsv1beta1.PullPolicy{
					TimeoutSeconds: ptr.To(s.TimeoutSeconds), BackoffLimit: ptr.To(BackoffLimit),
				},
				CompletionPolicy: appsv1beta1.CompletionPolicy{
					Type: appsv1beta1.Always, TTLSecondsAfterFinished: ptr.To(TTLSeconds),
				},
				SandboxConfig: &appsv1beta1.SandboxConfig{
					Labels: maps.Clone(labels), Annotations: maps.Clone(owner.Template.Annotations),
				},
				ImagePullPolicy: appsv1beta1.PullIfNotPresent,
			},
		},
	}
}

// JobName is the name of the job that pre-downloads container's image for revision:
// "<revision>-<container>", as the reference names it. The reference lets a name grow past what
// the API server takes (a long workload name and a long container name), and the job is then
// never created; such a name is cut and ends in a hash of the whole, so it stays unique.
func JobName(revisionName, container string) string {
	name := revisionName + "-" + container
	if len(name) <= MaxJobNameLength {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name)) // a hash.Hash never fails to write
	suffix := rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 16))
	return strings.TrimRight(name[:MaxJobNameLength-len(suffix)-1], ".-") + "-" + suffix
}
