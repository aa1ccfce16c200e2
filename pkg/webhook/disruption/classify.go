package disruption

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/kubectl/pkg/util/qos"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// Change is what a pod update does to the pod's availability.
type Change struct {
	// Op is the operation a budget is asked about; "" when the update cannot make the pod
	// unavailable and no budget is asked.
	Op policyv1alpha1.PubOperation
	// Why says what made the update one (for logs and refusals).
	Why string
}

// staticPodSourceAnnotation and apiSource: the kubelet marks the pods it read from files or
// URLs (static pods, mirrored into the API) with their source; only "api" pods are the API
// server's. A static pod's mirror cannot be resized: the kubelet recreates it.
const (
	staticPodSourceAnnotation = "kubernetes.io/config.source"
	apiSource                 = "api"
)

// Classify says what the update of old to updated does to the pod's availability, judged on the
// old pod as the budget sees it:
//   - a label with prefix unavailable-pod.kruise.io/ added marks the pod unavailable: UPDATE;
//   - the spec unchanged (labels, annotations, status): nothing;
//   - only regular containers' cpu and memory changed, each with a resizePolicy that is not
//     RestartContainer, on a pod that is not static and keeps its QoS class: RESIZE (the kubelet
//     applies it to the running containers);
//   - any other spec change (an image, an init container, a resource the kubelet cannot resize
//     live, one whose resizePolicy restarts the container, a QoS change): UPDATE.
func Classify(old, updated *corev1.Pod) Change {
	if !hasUnavailableLabel(old) && hasUnavailableLabel(updated) {
		return Change{Op: policyv1alpha1.PubUpdateOperation, Why: "a label " + policyv1alpha1.PodUnavailableLabelPrefix + "* marks the pod unavailable"}
	}
	if equality.Semantic.DeepEqual(old.Spec, updated.Spec) {
		return Change{}
	}
	if why := notResizable(old, updated); why != "" {
		return Change{Op: policyv1alpha1.PubUpdateOperation, Why: why}
	}
	return Change{Op: policyv1alpha1.PubResizeOperation, Why: "container cpu or memory resized in place"}
}

// notResizable says why the spec change from old to updated is not a live resize ("" when it is
// one).
func notResizable(old, updated *corev1.Pod) string {
	if !equality.Semantic.DeepEqual(withoutResources(&old.Spec), withoutResources(&updated.Spec)) {
		return "the pod's spec changed beyond container resources (an image, say): containers restart"
	}
	if isStatic(old) || isStatic(updated) {
		return "a static pod's resources changed: the kubelet recreates it"
	}
	if qos.GetPodQOS(old) != qos.GetPodQOS(updated) {
		return "the pod's QoS class changes: containers restart"
	}
	before := make(map[string]*corev1.Container, len(old.Spec.Containers))
	for i := range old.Spec.Containers {
		before[old.Spec.Containers[i].Name] = &old.Spec.Containers[i]
	}
	for i := range updated.Spec.Containers {
		c := &updated.Spec.Containers[i]
		was := before[c.Name]
		if was == nil {
			return "container " + c.Name + " is new: containers restart"
		}
		for _, name := range changedResources(was.Resources, c.Resources) {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return "container " + c.Name + " changes " + string(name) + ", which the kubelet cannot resize live"
			}
			if restartPolicy(c, name) == corev1.RestartContainer {
				return "container " + c.Name + " restarts to resize " + string(name) + " (resizePolicy RestartContainer)"
			}
		}
	}
	return ""
}

// withoutResources is spec with its regular containers' resources cleared.
func withoutResources(spec *corev1.PodSpec) *corev1.PodSpec {
	out := *spec
	out.Containers = make([]corev1.Container, len(spec.Containers))
	for i := range spec.Containers {
		out.Containers[i] = spec.Containers[i]
		out.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	return &out
}

// changedResources are the resources whose request or limit differs (set, unset or another
// quantity) between a and b.
func changedResources(a, b corev1.ResourceRequirements) []corev1.ResourceName {
	var out []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	for _, list := range []corev1.ResourceList{a.Requests, a.Limits, b.Requests, b.Limits} {
		for name := range list {
			if seen[name] {
				continue
			}
			seen[name] = true
			if differs(a.Requests, b.Requests, name) || differs(a.Limits, b.Limits, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func differs(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	x, inA := a[name]
	y, inB := b[name]
	if inA != inB {
		return true
	}
	return inA && !x.Equal(y)
}

// restartPolicy is c's resizePolicy for name; none is NotRequired.
func restartPolicy(c *corev1.Container, name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return corev1.NotRequired
}

func isStatic(pod *corev1.Pod) bool {
	source, ok := pod.Annotations[staticPodSourceAnnotation]
	return ok && source != apiSource
}

func hasUnavailableLabel(pod *corev1.Pod) bool {
	for k := range pod.Labels {
		if strings.HasPrefix(k, policyv1alpha1.PodUnavailableLabelPrefix) {
			return true
		}
	}
	return false
}
