package cloneset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Active is whether the pod still counts: not finished and not being deleted.
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Ready is the CloneSet's readiness: running, Ready, and not in the middle of an in-place update
// (the InPlaceUpdateReady condition, when the pod has it, is not False).
func Ready(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	ready := condition(pod, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return false
	}
	if c := condition(pod, pub.InPlaceUpdateReady); c != nil && c.Status == corev1.ConditionFalse {
		return false
	}
	return true
}

// Available is Ready for at least minReadySeconds at now, in lifecycle state Normal (or none): a
// pod waiting on a hook is not available.
func Available(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !Ready(pod) {
		return false
	}
	switch pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey]) {
	case "", pub.LifecycleStateNormal:
	default:
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	since := condition(pod, corev1.PodReady).LastTransitionTime
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// Revision is the revision (ControllerRevision name) the pod is at.
func Revision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }

// FactsOptions says how to read pods into PodFacts.
type FactsOptions struct {
	UpdateRevision  string
	MinReadySeconds int32
	Now             time.Time
	// PodsToDelete are scaleStrategy.podsToDelete.
	PodsToDelete map[string]bool
	// Recreate says whether updating an old pod needs a new pod; nil means never.
	Recreate func(*corev1.Pod) bool
}

// Facts reads active pods into what Calculate needs.
func Facts(pods []*corev1.Pod, o FactsOptions) []PodFacts {
	out := make([]PodFacts, 0, len(pods))
	for _, p := range pods {
		f := PodFacts{
			Updated:   Revision(p) == o.UpdateRevision,
			Available: Available(p, o.MinReadySeconds, o.Now),
		}
		if pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey]) == pub.LifecycleStatePreparingDelete {
			f.PreparingDelete = true
		} else if _, ok := p.Labels[appsv1beta1.SpecifiedDeleteKey]; ok || o.PodsToDelete[p.Name] {
			f.SpecifiedDelete = true
		}
		if !f.Updated && o.Recreate != nil {
			f.Recreate = o.Recreate(p)
		}
		out = append(out, f)
	}
	return out
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
