package statefulset

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// The identity labels every pod of a StatefulSet carries, as the built-in controller's.
const (
	PodNameLabel  = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	PodIndexLabel = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
)

// PodRecipe is what a new pod of a StatefulSet is made from.
type PodRecipe struct {
	// Owner is the StatefulSet's controller reference.
	Owner     metav1.OwnerReference
	Namespace string
	// Set is the StatefulSet's name; ServiceName its spec.serviceName (the pods' subdomain).
	Set         string
	ServiceName string
	Template    *corev1.PodTemplateSpec
	// ClaimTemplates are spec.volumeClaimTemplates.
	ClaimTemplates []corev1.PersistentVolumeClaim
	// MatchLabels (the selector's) go on the PVCs, as the built-in controller puts them.
	MatchLabels map[string]string
	// Revision is the ControllerRevision's name the pod is created at.
	Revision  string
	Lifecycle *pub.Lifecycle
	// NoIndexLabel (gate PodIndexLabel off): the pod gets no apps.kubernetes.io/pod-index label,
	// as OpenKruise's pods without the gate.
	NoIndexLabel bool
}

// NewPod is the pod of ordinal, created at r.Revision at time now: the template with the
// StatefulSet's identity (name, hostname, subdomain, identity labels), its PVCs mounted, and
// lifecycle state PreparingNormal. It gets the KruisePodReady readiness gate only when a
// lifecycle hook marks pods not ready, so a set without hooks makes the built-in controller's
// pods. It does not get the InPlaceUpdateReady gate: as in OpenKruise, an in-place update
// policy needs the template to declare it.
func NewPod(r PodRecipe, ordinal int, now time.Time) *corev1.Pod {
	t := r.Template.DeepCopy()
	if lifecycle.MarksNotReady(r.Lifecycle) {
		readinessgate.Declare(t)
	}
	name := PodName(r.Set, ordinal)
	pod := ownership.PodFromTemplate(t, name, r.Namespace, r.Owner)
	pod.Labels[PodNameLabel] = name
	if !r.NoIndexLabel {
		pod.Labels[PodIndexLabel] = strconv.Itoa(ordinal)
	}
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = r.Revision
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	pod.Annotations[pub.LifecycleTimestampKey] = now.UTC().Format(time.RFC3339)
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = r.ServiceName
	ownership.MountClaims(&pod.Spec, r.ClaimTemplates, func(t string) string { return ClaimName(t, r.Set, ordinal) })
	return pod
}

// NewClaims are the PVCs of the pod of ordinal, one per volume claim template, without owner
// references (ClaimOwners sets those, by the retention policy).
func NewClaims(r PodRecipe, ordinal int) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(r.ClaimTemplates))
	for i := range r.ClaimTemplates {
		c := ownership.ClaimFromTemplate(&r.ClaimTemplates[i], ClaimName(r.ClaimTemplates[i].Name, r.Set, ordinal), r.Namespace, r.MatchLabels)
		out = append(out, c)
	}
	return out
}
