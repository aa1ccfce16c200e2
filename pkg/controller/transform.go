package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/controller/sidecarterminator"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// Informer transforms: what the controllers' caches keep of each object.
//
// On a large cluster the caches of Pods and Nodes are most of the process's
// memory, and most of each object is never read here: a Node's
// status.images alone lists hundreds of images, and a pod carries volumes,
// probes, resources, affinity and the like. Pods and Nodes are therefore
// rebuilt from an allow-list of the fields some controller reads (below,
// with who reads what); every other type only loses its managedFields.
//
// Rules that keep this correct:
//   - A controller that starts reading a field of a cached Pod or Node must
//     add it here, and to the kept-field tests in transform_test.go.
//   - A lean object must never be written back: no controller may Update a
//     Pod or Node it read from a lister (they Patch, with the fields they
//     mean to change). The kruise kinds (CRRs, NodeImages, ImagePullJobs,
//     ImageListPullJobs) and Secrets are Updated from cached copies, so they
//     keep every field but managedFields. (An Update without managedFields
//     leaves the stored ones as they are.)
//   - Pods and Nodes are rebuilt, never modified: the lean object shares
//     the kept fields with the one decoded from the API server, which is
//     then dropped. managedFields are cleared in place on the other types:
//     client-go hands the transform a freshly decoded object that no one
//     else holds. Either way, transforming twice gives the same result.
//   - client-go does not pass tombstones (DeletedFinalStateUnknown) to
//     transforms: their object comes from the store, already transformed.
//     Should one come, its object may be the one in the store, which
//     informers' readers share: it is never modified (copied before
//     managedFields are cleared).

// transformObject is the informer transform of every factory of
// kruise-controller.
func transformObject(obj any) (any, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return cache.DeletedFinalStateUnknown{Key: tomb.Key, Obj: lean(tomb.Obj, false)}, nil
	}
	return lean(obj, true), nil
}

// lean returns what the cache keeps of obj. owned says whether obj may be
// modified (no one else holds it).
func lean(obj any, owned bool) any {
	switch o := obj.(type) {
	case *corev1.Pod:
		return leanPod(o)
	case *corev1.Node:
		return leanNode(o)
	}
	return stripManagedFields(obj, owned)
}

// stripManagedFields clears managedFields, which no controller reads and
// which are often the largest part of an object: in place when owned, else
// on a copy (and only when there are some).
func stripManagedFields(obj any, owned bool) any {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetManagedFields() == nil {
		return obj
	}
	if !owned {
		ro, ok := obj.(runtime.Object)
		if !ok {
			return obj
		}
		obj = ro.DeepCopyObject()
		if m, err = meta.Accessor(obj); err != nil {
			return obj
		}
	}
	m.SetManagedFields(nil)
	return obj
}

// leanMeta keeps an object's identity (name, namespace, uid,
// resourceVersion, which the pod readiness controller sends as its patch
// precondition, generation, creation and deletion), its labels (the
// ImagePullJob podSelector matches any pod label; the NodeImage controller
// copies every node label, and the sidecar terminator and the NodeImage
// controller read the virtual-kubelet label "type"), owner references and
// finalizers (small, kept for whoever needs ownership), and kruise's own
// annotations (the sidecar terminator compares
// apps.kruise.io/sidecar-terminated-at, which it writes) and pod-deletion-cost. Other annotations
// (last-applied-configuration, CNI and CSI node annotations, ...) and
// managedFields are dropped; generateName is kept (pubscope's eviction name
// patterns).
func leanMeta(in *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:                       in.Name,
		GenerateName:               in.GenerateName,
		Namespace:                  in.Namespace,
		UID:                        in.UID,
		ResourceVersion:            in.ResourceVersion,
		Generation:                 in.Generation,
		CreationTimestamp:          in.CreationTimestamp,
		DeletionTimestamp:          in.DeletionTimestamp,
		DeletionGracePeriodSeconds: in.DeletionGracePeriodSeconds,
		Labels:                     in.Labels,
		Annotations:                keptAnnotations(in.Annotations),
		OwnerReferences:            in.OwnerReferences,
		Finalizers:                 in.Finalizers,
	}
}

// keptAnnotations returns the annotations in a kruise.io domain
// (apps.kruise.io/..., kruise.io/...) and controller.kubernetes.io/pod-deletion-cost (the
// WorkloadSpread controller writes it only where it differs), and those a PodProbeMarker set,
// as the marks record lists them (the nodepodprobe controller compares their values, and takes
// them off), nil when there are none.
func keptAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	marked := markedAnnotations(in)
	for k, v := range in {
		if !isKruiseKey(k) && k != corev1.PodDeletionCost && !marked[k] {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// markedAnnotations are the annotation keys the nodeprobe marks record of annotations lists
// (nil when there is none, or it does not parse).
func markedAnnotations(in map[string]string) map[string]bool {
	if _, ok := in[nodeprobe.MarksAnnotation]; !ok {
		return nil
	}
	marks, err := nodeprobe.ReadMarks(in)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, m := range marks {
		for _, k := range m.Annotations {
			out[k] = true
		}
	}
	return out
}

// isKruiseKey reports whether an annotation key's prefix is kruise.io or a
// subdomain of it.
func isKruiseKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "kruise.io" || strings.HasSuffix(prefix, ".kruise.io"))
}

// leanPod keeps what the controllers read of a cached pod:
//
//   - sidecar terminator: spec.restartPolicy, spec.nodeName,
//     spec.terminationGracePeriodSeconds, the regular containers' names,
//     images and marking env vars (KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT
//     and ..._WITH_IMAGE: value, and whether valueFrom is set),
//     status.phase, status.conditions (SidecarTerminated and its
//     lastTransitionTime), the containers' statuses (name, containerID,
//     state.terminated exitCode and finishedAt), deletionTimestamp, uid and
//     the sidecar-terminated-at annotation;
//   - CRR lifecycle: uid, spec.nodeName, deletionTimestamp, status.phase and
//     the KruisePodReady condition (status, reason); it reads the pod's
//     readiness gates, container ports and preStop hooks from the API
//     server at admission, not from the cache;
//   - ImagePullJob: labels, spec.nodeName and status.phase of the pods a
//     podSelector picks;
//   - pod readiness: spec.readinessGates (is KruisePodReady declared?),
//     status.conditions (has it?), status.phase, deletionTimestamp, and
//     resourceVersion (the precondition of its status patch);
//   - launch priority: the regular containers' names and their
//     KRUISE_CONTAINER_BARRIER (valueFrom: the ConfigMap and key) and
//     KRUISE_CONTAINER_PRIORITY env vars, the launch-priority annotations
//     (kruise's), status.startTime (when a slow container is reported),
//     status.phase, deletionTimestamp, uid, and the containers' statuses
//     (ready, state.waiting.reason, state.terminated.exitCode);
//   - CloneSet: its own pods whole (see ownedByKruiseWorkload); of other pods, those it may
//     adopt, the labels, owner references, deletionTimestamp and status.phase.
//   - Advanced DaemonSet: its own pods whole (ownedByKruiseWorkload: the required node
//     affinity that names a pod's node before it is bound, the in-place update state); of
//     other pods, those it may adopt, the labels, owner references, deletionTimestamp and
//     spec.nodeName.
//   - BroadcastJob: its own pods whole (ownedByKruiseWorkload: the required node affinity
//     that names a pod's node before it is bound, tolerations, restart counts).
//   - SidecarSet: the pods a SidecarSet injected whole (see injectedBySidecarSet); of other
//     pods, the labels and namespace its selectors match.
//   - PodUnavailableBudget: labels (selectors, unavailable-pod.kruise.io/ and specified-delete),
//     owner references, kruise's annotations (kruise.io/related-pub, the in-place update state),
//     uid, creation and deletion, status.phase and status.conditions (Ready,
//     InPlaceUpdateReady); the container statuses of a pod under an in-place update (kept whole).
//   - WorkloadSpread: labels, owner references, the matched-workloadspread and pod-deletion-cost
//     annotations, uid, creation and deletion, spec.nodeName, status.phase and status.conditions
//     (Ready, PodScheduled); the pods it adopts it reads whole from the API server.
//   - EphemeralJob: labels, uid, creation and deletion, status.phase, the ephemeral containers'
//     names and KRUISE_EJOB_ID env (whose they are), and their statuses (name and state).
//   - PodProbeMarker (NodePodProbe specs): labels, uid, deletion, spec.nodeName, status.phase,
//     status.conditions (Initialized), status.podIP (where TCP and HTTP probes go), the
//     containers' named ports (name and number: a probe's named port is resolved to its number)
//     and kruise's annotations (container-probe-context, the marks).
//   - nodepodprobe (PodProbeMarker marks): labels, the marks record (kruise's annotation) and
//     the annotations it lists, status.conditions, spec.nodeName, uid, resourceVersion (it
//     does not send the same patch twice for one version), deletion and status.phase.
//
// Dropped: init containers, every other container field
// (resources, probes, unnamed ports and ports' protocol and host port, lifecycle, volume mounts,
// other env vars, envFrom, ...), volumes, affinity, tolerations and the rest of the spec;
// init container statuses, the containers' image, imageID,
// lastState, resources and termination or waiting messages, status.podIPs, host
// IPs, QoS class, and the pod's status reason and message.
// The containers' ready, started and restartCount are kept although only
// the live pod's are read today: they are a few bytes.
func leanPod(in *corev1.Pod) *corev1.Pod {
	if in == nil {
		return nil
	}
	if ownedByKruiseWorkload(in) || injectedBySidecarSet(in) {
		// A CloneSet's pods are kept whole but for managedFields: its in-place updates read
		// the containers' specs and statuses (images, image IDs, resources, init containers)
		// and every annotation of the pod (pod-deletion-cost, the update state).
		out := *in
		out.ManagedFields = nil
		return &out
	}
	return &corev1.Pod{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: leanMeta(&in.ObjectMeta),
		Spec: corev1.PodSpec{
			NodeName:                      in.Spec.NodeName,
			RestartPolicy:                 in.Spec.RestartPolicy,
			TerminationGracePeriodSeconds: in.Spec.TerminationGracePeriodSeconds,
			ReadinessGates:                in.Spec.ReadinessGates,
			Containers:                    leanContainers(in.Spec.Containers),
			EphemeralContainers:           leanEphemeralContainers(in.Spec.EphemeralContainers),
		},
		Status: corev1.PodStatus{
			Phase:             in.Status.Phase,
			Conditions:        in.Status.Conditions,
			PodIP:             in.Status.PodIP,
			StartTime:         in.Status.StartTime,
			ContainerStatuses: leanContainerStatuses(in.Status.ContainerStatuses),
			// The EphemeralJob controller's per-pod state.
			EphemeralContainerStatuses: leanContainerStatuses(in.Status.EphemeralContainerStatuses),
		},
	}
}

// leanEphemeralContainers keeps each ephemeral container's name and its KRUISE_EJOB_ID env var,
// the mark of the EphemeralJob that added it.
func leanEphemeralContainers(in []corev1.EphemeralContainer) []corev1.EphemeralContainer {
	if in == nil {
		return nil
	}
	out := make([]corev1.EphemeralContainer, len(in))
	for i := range in {
		out[i].Name = in[i].Name
		for _, e := range in[i].Env {
			if e.Name == appsv1alpha1.EphemeralContainerEnvKey {
				out[i].Env = append(out[i].Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
			}
		}
	}
	return out
}

// injectedBySidecarSet reports whether a SidecarSet injected pod (it records the SidecarSet's
// hash): the SidecarSet controller reads such a pod's sidecar containers and native sidecar
// init containers with their statuses (image, image ID, container ID) and its sidecarset
// annotations, and upgrades it in place.
func injectedBySidecarSet(pod *corev1.Pod) bool {
	return pod.Annotations[sidecarrules.HashAnnotation] != ""
}

// ownedByKruiseWorkload reports whether a kruise workload (an apps.kruise.io kind) controls pod.
func ownedByKruiseWorkload(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && strings.HasPrefix(ref.APIVersion, "apps.kruise.io/")
}

// leanContainers keeps each container's name, image, named ports (name and number) and the env
// vars some controller reads.
func leanContainers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i := range in {
		out[i] = corev1.Container{Name: in[i].Name, Image: in[i].Image, Ports: namedPorts(in[i].Ports), Env: markingEnv(in[i].Env)}
	}
	return out
}

// namedPorts keeps the name and number of the ports that have a name, nil when none has.
func namedPorts(in []corev1.ContainerPort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range in {
		if p.Name != "" {
			out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort})
		}
	}
	return out
}

// markingEnv keeps, in order, the env vars that mark a sidecar or a launch
// priority, nil when there are none.
func markingEnv(in []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range in {
		if keptEnv(e.Name) {
			out = append(out, e)
		}
	}
	return out
}

// keptEnv reports whether an env var of a regular container is read by a
// controller from the cache.
func keptEnv(name string) bool {
	switch name {
	case sidecarterminator.EnvTerminateSidecar, sidecarterminator.EnvTerminateSidecarWithImage,
		lp.EnvBarrier, lp.EnvPriority:
		return true
	}
	return false
}

// leanContainerStatuses keeps each status's name, containerID, ready,
// started, restartCount and state without its messages (a terminated
// container's message can be kilobytes of its log).
func leanContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		st := &in[i]
		out[i] = corev1.ContainerStatus{
			Name:         st.Name,
			ContainerID:  st.ContainerID,
			Ready:        st.Ready,
			Started:      st.Started,
			RestartCount: st.RestartCount,
			State:        leanState(st.State),
		}
	}
	return out
}

func leanState(in corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if w := in.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
	}
	if r := in.Running; r != nil {
		out.Running = &corev1.ContainerStateRunning{StartedAt: r.StartedAt}
	}
	if t := in.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    t.ExitCode,
			Signal:      t.Signal,
			Reason:      t.Reason,
			StartedAt:   t.StartedAt,
			FinishedAt:  t.FinishedAt,
			ContainerID: t.ContainerID,
		}
	}
	return out
}

// leanNode keeps what the controllers read of a cached node: its name and
// uid (the NodeImage's name and owner reference), its labels (copied to the
// NodeImage; "type=virtual-kubelet" tells the sidecar terminator and the
// NodeImage controller that no kruise-daemon runs there) and
// status.conditions (the NodeImage controller waits for Ready), and
// spec.taints (the Advanced DaemonSet and BroadcastJob decide which nodes run
// their pods from them, with the labels and name for nodeSelector and node
// affinity), spec.unschedulable and status.allocatable (BroadcastJob, as
// OpenKruise: a cordoned node only for a template that tolerates it, and the
// pod's requests must fit the node's allocatable). The rest of the spec
// (podCIDRs, providerID, ...) and of the status (images, capacity,
// addresses, nodeInfo, daemonEndpoints, volumesInUse, volumesAttached,
// config, runtimeHandlers, features) are dropped: no controller reads them.
func leanNode(in *corev1.Node) *corev1.Node {
	if in == nil {
		return nil
	}
	return &corev1.Node{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: leanMeta(&in.ObjectMeta),
		Spec:       corev1.NodeSpec{Taints: in.Spec.Taints, Unschedulable: in.Spec.Unschedulable},
		Status:     corev1.NodeStatus{Conditions: in.Status.Conditions, Allocatable: in.Status.Allocatable},
	}
}
