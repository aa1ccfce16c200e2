package crradmit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Verdict is what admission makes of a request and its pod: reject it
// (with a message per container at fault), let it wait, or go ahead.
type Verdict struct {
	Reject       string
	PerContainer map[string]string
	Wait         string
	Statuses     map[string]*corev1.ContainerStatus
}

// assess judges the request against the pod as it is now.
func Assess(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) Verdict {
	names := make([]string, 0, len(crr.Spec.Containers))
	for _, c := range crr.Spec.Containers {
		names = append(names, c.Name)
	}
	if u := CheckPod(pod, names); u != nil {
		return Verdict{Reject: u.Message, PerContainer: u.PerContainer}
	}
	var notStarted []string
	switch {
	case pod.Spec.NodeName == "":
		return Verdict{Wait: fmt.Sprintf("pod %q is not scheduled to a node yet", pod.Name)}
	case pod.Status.Phase != corev1.PodRunning:
		return Verdict{Wait: fmt.Sprintf("pod %q is not running yet (phase %q)", pod.Name, pod.Status.Phase)}
	}
	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for i := range pod.Status.ContainerStatuses {
		statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
	}
	for _, want := range crr.Spec.Containers {
		if st := statuses[want.Name]; st == nil || st.ContainerID == "" {
			notStarted = append(notStarted, want.Name)
		}
	}
	if len(notStarted) > 0 {
		return Verdict{Wait: fmt.Sprintf("containers of pod %q have not started yet: %s", pod.Name, strings.Join(notStarted, ", "))}
	}
	return Verdict{Statuses: statuses}
}

// ReadOnlyMessage is the message of a request carrying fields only
// admission writes.
func ReadOnlyMessage(set []string) string {
	return fmt.Sprintf("spec.containers[].preStop, ports and statusContext are read-only: kruise-controller fills them in from the pod; leave them out (set in: %s)",
		strings.Join(set, ", "))
}

// CreatorSetFields lists "<container>.<field>" for every per-container field
// admission writes that a request already carries (an empty list counts).
func CreatorSetFields(crr *appsv1alpha1.ContainerRecreateRequest) []string {
	var set []string
	for _, ctr := range crr.Spec.Containers {
		if ctr.PreStop != nil {
			set = append(set, ctr.Name+".preStop")
		}
		if ctr.Ports != nil {
			set = append(set, ctr.Name+".ports")
		}
		if ctr.StatusContext != nil {
			set = append(set, ctr.Name+".statusContext")
		}
	}
	return set
}

// portsToCopy is what a request keeps of a container's ports: all of them,
// as OpenKruise copies them, when they fit the request's bound; else only
// the ports the container's httpGet preStop hook names (by name or number).
// A pod has no such bound, and OpenKruise admits a request for such a
// container: copying them all would have the API server refuse the whole
// admission. The copy is informational (kruise-daemon resolves the hook's
// port from the pod itself).
func portsToCopy(spec *corev1.Container) []corev1.ContainerPort {
	if len(spec.Ports) <= appsv1alpha1.MaxPortsPerContainer {
		return spec.Ports
	}
	if spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil || spec.Lifecycle.PreStop.HTTPGet == nil {
		return nil
	}
	want := spec.Lifecycle.PreStop.HTTPGet.Port
	var out []corev1.ContainerPort
	for _, p := range spec.Ports {
		if (want.Type == intstr.String && p.Name == want.StrVal) || (want.Type == intstr.Int && p.ContainerPort == want.IntVal) {
			out = append(out, p)
		}
	}
	return out // a name, or a number and protocol, is unique in a container
}

// Patch is an RFC 6902 JSON patch.
type Patch []PatchOp

type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func (p *Patch) Add(path string, value any) {
	*p = append(*p, PatchOp{Op: "add", Path: path, Value: value})
}

// SetEntries adds to p the operations that put entries into the string map
// at path, read as cur: the whole map when cur is empty (the object may have
// no map there), else each entry cur does not already hold.
func (p *Patch) SetEntries(path string, cur, entries map[string]string) {
	if len(cur) == 0 {
		if len(entries) > 0 {
			p.Add(path, entries)
		}
		return
	}
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		if v, ok := cur[k]; !ok || v != entries[k] {
			p.Add(path+"/"+pointerEscaper.Replace(k), entries[k])
		}
	}
}

// pointerEscaper escapes a map key as a JSON pointer (RFC 6901) token: a
// label key such as "crr.apps.kruise.io/pod-uid" holds a "/".
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// preStopHandler converts a pod's preStop hook. A sleep hook has no field in
// the (OpenKruise-compatible) ProbeHandler and is left out; nil when nothing
// is left.
func preStopHandler(h *corev1.LifecycleHandler) *appsv1alpha1.ProbeHandler {
	if h.Exec == nil && h.HTTPGet == nil && h.TCPSocket == nil {
		return nil
	}
	return &appsv1alpha1.ProbeHandler{
		Exec:      h.Exec.DeepCopy(),
		HTTPGet:   h.HTTPGet.DeepCopy(),
		TCPSocket: h.TCPSocket.DeepCopy(),
	}
}
