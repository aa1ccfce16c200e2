package cloneset

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// Active is whether the pod still counts: not finished and not being deleted.
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

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
			Updated:   podstate.Revision(p) == o.UpdateRevision,
			Available: podstate.Available(p, o.MinReadySeconds, o.Now),
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
