package podbudget

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// maxOwnerDepth bounds the walk up a pod's controllers (pod → ReplicaSet → Deployment is 2;
// a workload of a workload of a ReplicaSet is 3).
const maxOwnerDepth = 4

// Workload is the controller a budget counts a pod under, in the pod's namespace: its top-level
// owner as Workloads names it (a ReplicaSet's pods under its Deployment, or whatever else controls
// the ReplicaSet). A pod without a controller is a Workload of its own of kind Pod.
type Workload struct {
	// APIVersion of the workload (v1 for a bare pod).
	APIVersion string
	// Kind and Name are the workload's, as status.workloads lists them.
	Kind string
	Name string
}

// Bare reports whether w is a pod without a controller.
func (w Workload) Bare() bool { return w.Kind == "Pod" && w.APIVersion == "v1" }

func (w Workload) String() string { return w.Kind + "/" + w.Name }

// Owners reads the controller of an object a pod's owner chain names, in namespace; nil when it
// has none, or is gone or unknown to the reader. Implementations read caches.
type Owners interface {
	ControllerOf(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error)
}

// OwnersFunc is a function that is an Owners.
type OwnersFunc func(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error)

// ControllerOf calls f.
func (f OwnersFunc) ControllerOf(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
	return f(ctx, namespace, ref)
}

// isReplicaSet reports whether ref names an apps ReplicaSet.
func isReplicaSet(ref *metav1.OwnerReference) bool {
	return ownership.SameKind(ref.APIVersion, ref.Kind, "apps/v1", "ReplicaSet")
}

// WorkloadOf returns the workload a budget counts pod under: its controller, or, for a
// ReplicaSet that has a controller of its own (a Deployment, an Argo Rollout, ...), that one.
func WorkloadOf(ctx context.Context, owners Owners, pod *corev1.Pod) (Workload, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return Workload{APIVersion: "v1", Kind: "Pod", Name: pod.Name}, nil
	}
	if isReplicaSet(ref) && owners != nil {
		up, err := owners.ControllerOf(ctx, pod.Namespace, *ref)
		if err != nil {
			return Workload{}, fmt.Errorf("reading the controller of ReplicaSet %s/%s: %w", pod.Namespace, ref.Name, err)
		}
		if up != nil {
			ref = up
		}
	}
	return Workload{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}, nil
}

// sameTarget reports whether ref names the budget's target: same group, kind and name (any
// version of the group).
func sameTarget(ref *metav1.OwnerReference, t *policyv1alpha1.TargetReference) bool {
	return ref.Name == t.Name && ownership.SameKind(ref.APIVersion, ref.Kind, t.APIVersion, t.Kind)
}

// Covers reports whether budget b covers pod: the pod is in its namespace, and its labels match
// the selector (an empty or invalid one matches nothing) or the target is among the pod's
// controllers, walked up from the pod (pod → ReplicaSet → Deployment, or → whatever controls the
// ReplicaSet: OpenKruise #2571 only knew Deployments). The pod's kruise.io/related-pub
// annotation is not trusted: it is a hint of where to look first.
func Covers(ctx context.Context, owners Owners, b *policyv1alpha1.PodUnavailableBudget, pod *corev1.Pod) (bool, error) {
	if b.Namespace != pod.Namespace || b.DeletionTimestamp != nil {
		return false, nil
	}
	if b.Spec.Selector != nil {
		return selects(b.Spec.Selector, pod.Labels), nil
	}
	t := b.Spec.TargetReference
	if t == nil || t.Name == "" {
		return false, nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	for depth := 0; ref != nil && depth < maxOwnerDepth; depth++ {
		if sameTarget(ref, t) {
			return true, nil
		}
		if owners == nil {
			return false, nil
		}
		up, err := owners.ControllerOf(ctx, pod.Namespace, *ref)
		if err != nil {
			return false, fmt.Errorf("reading the controller of %s %s/%s: %w", ref.Kind, pod.Namespace, ref.Name, err)
		}
		ref = up
	}
	return false, nil
}

// selects reports whether a non-empty, valid selector matches set.
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(set))
}
