package cloneset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// PodTemplateHashLabel is the upstream label holding a short form of the pod's revision.
const PodTemplateHashLabel = "pod-template-hash"

// PodRecipe is what a new pod of a CloneSet is made from.
type PodRecipe struct {
	// Owner is the CloneSet's controller reference.
	Owner     metav1.OwnerReference
	Namespace string
	// CloneSet is the CloneSet's name.
	CloneSet string
	Template *corev1.PodTemplateSpec
	// ClaimTemplates are spec.volumeClaimTemplates.
	ClaimTemplates []corev1.PersistentVolumeClaim
	// Selector's matchLabels go on the PVCs, so they can be found as the CloneSet's.
	MatchLabels map[string]string
	// Revision is the ControllerRevision's name (<cloneset>-<hash>) the pod is created at.
	Revision string
	// ShortHash (gate CloneSetShortHash): the pod's controller-revision-hash label holds only
	// the revision's hash, as OpenKruise writes it under that gate.
	ShortHash bool
}

// NewPod is the pod with instance ID id, created at r.Revision at time now: the template with
// the CloneSet's identity and bookkeeping added. It carries the InPlaceUpdateReady readiness gate
// whatever the update strategy, so that a later switch to an in-place strategy works on it, and
// the KruisePodReady gate, so that a lifecycle hook's markPodNotReady added later holds it too
// (OpenKruise's pod webhook gives every pod of its workloads that gate: manifests written for it
// use markPodNotReady without listing the gate). It starts in lifecycle state PreparingNormal.
func NewPod(r PodRecipe, id string, now time.Time) *corev1.Pod {
	t := r.Template.DeepCopy()
	inplace.InjectReadinessGate(t)
	readinessgate.Declare(t)
	pod := ownership.PodFromTemplate(t, PodName(r.CloneSet, id), r.Namespace, r.Owner)
	pod.Labels[appsv1beta1.CloneSetInstanceID] = id
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = RevisionLabel(r.CloneSet, r.Revision, r.ShortHash)
	pod.Labels[PodTemplateHashLabel] = ShortRevision(r.CloneSet, r.Revision)
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	pod.Annotations[pub.LifecycleTimestampKey] = now.UTC().Format(time.RFC3339)
	ownership.MountClaims(&pod.Spec, r.ClaimTemplates, func(t string) string { return ClaimName(t, r.CloneSet, id) })
	return pod
}

// NewClaims are the PVCs of the pod with instance ID id, one per volume claim template.
func NewClaims(r PodRecipe, id string) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(r.ClaimTemplates))
	for i := range r.ClaimTemplates {
		c := ownership.ClaimFromTemplate(&r.ClaimTemplates[i], ClaimName(r.ClaimTemplates[i].Name, r.CloneSet, id), r.Namespace, r.MatchLabels)
		c.Labels[appsv1beta1.CloneSetInstanceID] = id
		c.OwnerReferences = []metav1.OwnerReference{r.Owner}
		out = append(out, c)
	}
	return out
}

// RevisionLabel is the controller-revision-hash label of a pod at revision <cloneset>-<hash>: the
// name, or with short (gate CloneSetShortHash) the hash alone. Both forms are read everywhere
// (revision.PodAt), so pods written before and after the gate changes stay at their revision.
func RevisionLabel(cloneSet, revision string, short bool) string {
	if short {
		return ShortRevision(cloneSet, revision)
	}
	return revision
}

// ShortRevision is the hash part of revision <cloneset>-<hash>.
func ShortRevision(cloneSet, revision string) string {
	if p := cloneSet + "-"; len(revision) > len(p) && revision[:len(p)] == p {
		return revision[len(p):]
	}
	return revision
}
