package gen

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodModifier changes a Pod.
type PodModifier func(*corev1.Pod)

// Pod is a Pod named name, changed by mods in order.
func Pod(name string, mods ...PodModifier) *corev1.Pod {
	return apply(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// PodFrom is a copy of p changed by mods; p is left as it was.
func PodFrom(p *corev1.Pod, mods ...PodModifier) *corev1.Pod {
	return apply(p.DeepCopy(), mods)
}

func SetPodNamespace(ns string) PodModifier { return func(p *corev1.Pod) { p.Namespace = ns } }

// SetPodGenerateName sets the pod's generateName (and no name: pass "" to
// Pod for a pod not created yet).
func SetPodGenerateName(prefix string) PodModifier {
	return func(p *corev1.Pod) { p.GenerateName = prefix }
}

func SetPodUID(uid types.UID) PodModifier { return func(p *corev1.Pod) { p.UID = uid } }

func SetPodResourceVersion(rv string) PodModifier {
	return func(p *corev1.Pod) { p.ResourceVersion = rv }
}

// SetPodGeneration sets the pod's metadata.generation and the status.observedGeneration the
// kubelet reports (0: none, as before Kubernetes 1.34).
func SetPodGeneration(generation, observed int64) PodModifier {
	return func(p *corev1.Pod) { p.Generation, p.Status.ObservedGeneration = generation, observed }
}

// AddPodLabels adds labels to the pod's, replacing values of the same keys.
func AddPodLabels(labels map[string]string) PodModifier {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for k, v := range labels {
			p.Labels[k] = v
		}
	}
}

// AddPodAnnotations adds annotations to the pod's, replacing values of the
// same keys.
func AddPodAnnotations(annotations map[string]string) PodModifier {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			p.Annotations[k] = v
		}
	}
}

func SetPodOwnerReferences(refs ...metav1.OwnerReference) PodModifier {
	return func(p *corev1.Pod) { p.OwnerReferences = refs }
}

// SetPodDeletionTimestamp marks the pod as being deleted since at.
func SetPodDeletionTimestamp(at time.Time) PodModifier {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: at} }
}

func SetPodNodeName(node string) PodModifier { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func SetPodRestartPolicy(policy corev1.RestartPolicy) PodModifier {
	return func(p *corev1.Pod) { p.Spec.RestartPolicy = policy }
}

func SetPodTerminationGracePeriodSeconds(seconds int64) PodModifier {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &seconds }
}

// SetPodContainers replaces the pod's containers.
func SetPodContainers(cs ...corev1.Container) PodModifier {
	return func(p *corev1.Pod) { p.Spec.Containers = cs }
}

// AddPodContainer appends c to the pod's containers.
func AddPodContainer(c corev1.Container) PodModifier {
	return func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, c) }
}

// AddPodInitContainer appends c to the pod's init containers.
func AddPodInitContainer(c corev1.Container) PodModifier {
	return func(p *corev1.Pod) { p.Spec.InitContainers = append(p.Spec.InitContainers, c) }
}

// SetPodContainerPreStop gives the pod's container named container the
// preStop hook h.
func SetPodContainerPreStop(container string, h *corev1.LifecycleHandler) PodModifier {
	return func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == container {
				p.Spec.Containers[i].Lifecycle = &corev1.Lifecycle{PreStop: h}
			}
		}
	}
}

// AddPodReadinessGate adds a readiness gate on the condition type t.
func AddPodReadinessGate(t corev1.PodConditionType) PodModifier {
	return func(p *corev1.Pod) {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
}

func SetPodPhase(phase corev1.PodPhase) PodModifier {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

// SetPodStartTime sets status.startTime, when the kubelet took the pod on.
func SetPodStartTime(at time.Time) PodModifier {
	return func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: at} }
}

func SetPodIP(ip string) PodModifier { return func(p *corev1.Pod) { p.Status.PodIP = ip } }

// SetPodCondition sets the pod's condition of c's type to c, or appends c
// when the pod has none of that type.
func SetPodCondition(c corev1.PodCondition) PodModifier {
	return func(p *corev1.Pod) {
		p.Status.Conditions = upsert(p.Status.Conditions, c, func(c corev1.PodCondition) corev1.PodConditionType { return c.Type })
	}
}

// SetPodContainerStatus sets the status of the container st names to st,
// or appends st when the pod has no status for that container.
func SetPodContainerStatus(st corev1.ContainerStatus) PodModifier {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = upsert(p.Status.ContainerStatuses, st, func(s corev1.ContainerStatus) string { return s.Name })
	}
}
