package cloneset

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
	"github.com/nodekruise/kruise/pkg/workload/revision"
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
	// RecreateBack says whether rolling an updated pod back to the current revision needs a new
	// pod; nil when no pod is rolled back.
	RecreateBack func(*corev1.Pod) bool
}

// Facts reads active pods into what Calculate needs.
func Facts(pods []*corev1.Pod, o FactsOptions) []PodFacts {
	out := make([]PodFacts, 0, len(pods))
	for _, p := range pods {
		state := pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey])
		f := PodFacts{
			Updated:   revision.PodAt(p, o.UpdateRevision),
			Available: podstate.Available(p, o.MinReadySeconds, o.Now),
		}
		if !f.Updated && o.Recreate != nil {
			f.Recreate = o.Recreate(p)
		} else if f.Updated && o.RecreateBack != nil {
			f.Recreate = o.RecreateBack(p)
		}
		if state == pub.LifecycleStatePreparingDelete {
			f.PreparingDelete = true
		} else if _, ok := p.Labels[appsv1beta1.SpecifiedDeleteKey]; ok || o.PodsToDelete[p.Name] {
			f.SpecifiedDelete = true
		}
		out = append(out, f)
	}
	return out
}

// PreparingUpdateAsUpdated is facts (of pods, index for index) with every pod in lifecycle state
// PreparingUpdate counted as updated: what the scale pass reads under gate PreparingUpdateAsUpdate,
// as the reference's does, so that a scale-in takes such a pod after the old pods and a
// scale-out does not create an old pod in its stead. The update pass still reads the pod as old:
// it is on its way to the update revision, waiting on its inPlaceUpdate hook.
func PreparingUpdateAsUpdated(pods []*corev1.Pod, facts []PodFacts) []PodFacts {
	out := slices.Clone(facts)
	for i, p := range pods {
		if pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey]) == pub.LifecycleStatePreparingUpdate {
			out[i].Updated, out[i].Recreate = true, false
		}
	}
	return out
}
