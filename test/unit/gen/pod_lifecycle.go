package gen

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// AddPodFinalizers appends finalizers to the pod's.
func AddPodFinalizers(finalizers ...string) PodModifier {
	return func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, finalizers...) }
}

// SetPodLifecycleState sets the pod's lifecycle state label (apps.kruise.io lifecycle).
func SetPodLifecycleState(state pub.LifecycleStateType) PodModifier {
	return AddPodLabels(map[string]string{pub.LifecycleStateKey: string(state)})
}
