package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/contract/metadataenv"
)

// SlimPod is the transform of the daemon's pod informer: it keeps only the
// fields that the daemon's readers of the pod cache use and drops the rest
// (managedFields, annotations, env, volumes, resources, probes, init and
// ephemeral containers, most of each container status, ...), which are most
// of a pod's size. The cache holds every pod of the node, so this is the
// daemon's largest cache by far.
//
// The readers, and what they read:
//   - the CRR executor (package recreate): name, namespace, UID, deletion
//     timestamp; spec.restartPolicy, terminationGracePeriodSeconds,
//     hostNetwork, readinessGates, each container's name, lifecycle.preStop
//     and ports; status.podIP, conditions and each container status's name,
//     containerID, restartCount, ready and state. Its Events on the pod need
//     the name, namespace, UID and resourceVersion.
//   - the coexistence guard (package coexist): labels, ownerReferences,
//     spec.nodeName, status.phase, each container's command and image.
//   - the env-from-metadata restarter (package envrestart): labels, the
//     in-place update state annotation (its restart marks too), and of each container the env vars
//     filled from labels and annotations (only those, and only the
//     annotations they read); spec.restartPolicy and
//     terminationGracePeriodSeconds, status.conditions and each container
//     status's name, containerID and state.
//   - the node prober (package podprobe): name, namespace, UID,
//     spec.nodeName, hostNetwork, each container's name and ports;
//     status.podIP, podIPs and each container status's name, containerID
//     and state (its start time).
//
// The informer itself needs the resourceVersion. A new reader of the pod
// cache must add what it reads here; the executor's and the guard's tests
// run on slimmed pods, so a reader of a dropped field fails them.
func SlimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		// A DeletedFinalStateUnknown tombstone, or a test's odd object:
		// cached as it is.
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:                       p.Name,
			Namespace:                  p.Namespace,
			UID:                        p.UID,
			ResourceVersion:            p.ResourceVersion,
			Generation:                 p.Generation,
			CreationTimestamp:          p.CreationTimestamp,
			DeletionTimestamp:          p.DeletionTimestamp,
			DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
			Labels:                     p.Labels,
			OwnerReferences:            p.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			NodeName:                      p.Spec.NodeName,
			RestartPolicy:                 p.Spec.RestartPolicy,
			TerminationGracePeriodSeconds: p.Spec.TerminationGracePeriodSeconds,
			HostNetwork:                   p.Spec.HostNetwork,
			ReadinessGates:                p.Spec.ReadinessGates,
		},
		Status: corev1.PodStatus{
			Phase:      p.Status.Phase,
			PodIP:      p.Status.PodIP,
			PodIPs:     p.Status.PodIPs,
			Conditions: p.Status.Conditions,
		},
	}
	if len(p.Spec.Containers) > 0 {
		out.Spec.Containers = make([]corev1.Container, len(p.Spec.Containers))
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			out.Spec.Containers[i] = corev1.Container{Name: c.Name, Image: c.Image, Command: c.Command, Ports: c.Ports}
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				out.Spec.Containers[i].Lifecycle = &corev1.Lifecycle{PreStop: c.Lifecycle.PreStop}
			}
			out.Spec.Containers[i].Env = slimEnv(c, p.Annotations, &out.Annotations)
		}
	}
	keepAnnotation(p.Annotations, &out.Annotations, pub.InPlaceUpdateStateKey)
	keepAnnotation(p.Annotations, &out.Annotations, pub.InPlaceUpdateStateKeyOld)
	if len(p.Status.ContainerStatuses) > 0 {
		out.Status.ContainerStatuses = make([]corev1.ContainerStatus, len(p.Status.ContainerStatuses))
		for i := range p.Status.ContainerStatuses {
			s := &p.Status.ContainerStatuses[i]
			out.Status.ContainerStatuses[i] = corev1.ContainerStatus{
				Name: s.Name, ContainerID: s.ContainerID, RestartCount: s.RestartCount, Ready: s.Ready, State: s.State,
			}
		}
	}
	return out, nil
}

// slimEnv keeps of c's env only the vars filled from the pod's labels and
// annotations, as fieldRefs, and keeps the annotations they read in kept.
// Most pods have none, and cost nothing.
func slimEnv(c *corev1.Container, annotations map[string]string, kept *map[string]string) []corev1.EnvVar {
	vars := metadataenv.Vars(c)
	if len(vars) == 0 {
		return nil
	}
	env := make([]corev1.EnvVar, len(vars))
	for i, v := range vars {
		env[i] = corev1.EnvVar{Name: v.Name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: v.FieldPath()}}}
		if v.Source == metadataenv.Annotations {
			keepAnnotation(annotations, kept, v.Key)
		}
	}
	return env
}

// keepAnnotation copies annotation key, when from has it, into *to.
func keepAnnotation(from map[string]string, to *map[string]string, key string) {
	v, ok := from[key]
	if !ok {
		return
	}
	if *to == nil {
		*to = map[string]string{}
	}
	(*to)[key] = v
}
