// Package livenessinjection is the enhanced liveness probe's pod webhook (gate
// EnhancedLivenessProbe): at create, a pod of a kruise workload (its controller ownerReference is
// in group apps.kruise.io) annotated apps.kruise.io/using-enhanced-liveness: "true" has every
// regular container's livenessProbe taken off and recorded in the annotation
// apps.kruise.io/container-probe-context (nodeprobe.EncodeProbeContext), as OpenKruise does. The
// kubelet then no longer probes it; kruise-daemon does (from the pod's NodePodProbe entry), and
// pkg/controller/enhancedliveness restarts a failing container through a
// ContainerRecreateRequest, within a budget per workload.
//
// Its configuration's failurePolicy is Ignore: a pod created while kruise is unreachable keeps its
// livenessProbe and the kubelet goes on probing it, which is what the pod asked for before it
// opted in.
package livenessinjection

import (
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
)

// Operation is one RFC 6902 JSON patch operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Applies says whether the pod opted in and is a kruise workload's: the annotation is "true" and
// its controller ownerReference's API group is apps.kruise.io (OpenKruise's condition; only a
// kruise workload's pods are meant to hand their liveness to kruise).
func Applies(pod *corev1.Pod) bool {
	if pod.Annotations[appsv1alpha1.UsingEnhancedLivenessAnnotation] != "true" {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == appsv1alpha1.GroupName
}

// Mutate returns the patch that moves the pod's regular containers' liveness probes into the
// probe context annotation; none when the pod does not apply (Applies) or has no liveness
// probe. It does not change pod. Called again on its own output it returns no patch: the probes
// are gone and the annotation stays as written. Called again after a later webhook injected a
// container with a liveness probe (reinvocation), it moves that one too and keeps the entries
// already there for containers of the pod that have no livenessProbe.
func Mutate(pod *corev1.Pod) ([]Operation, error) {
	if !Applies(pod) {
		return nil, nil
	}
	var moved []nodeprobe.ContainerLiveness
	var ops []Operation
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.LivenessProbe == nil {
			continue
		}
		moved = append(moved, nodeprobe.ContainerLiveness{Name: c.Name, LivenessProbe: c.LivenessProbe})
		ops = append(ops, Operation{Op: "remove", Path: "/spec/containers/" + strconv.Itoa(i) + "/livenessProbe"})
	}
	if len(moved) == 0 {
		return nil, nil
	}
	probes := kept(pod)
	probes = append(probes, moved...)
	raw, err := nodeprobe.EncodeProbeContext(probes)
	if err != nil {
		return nil, err
	}
	// The pod has annotations: it carries the opt-in one. "add" replaces a value already there.
	ops = append(ops, Operation{Op: "add", Path: "/metadata/annotations/" + escape(appsv1alpha1.ContainerProbeContextAnnotation), Value: raw})
	return ops, nil
}

// kept are the entries of the pod's probe context for containers of the pod that have no
// livenessProbe (moved by an earlier call on the same request); an unreadable context keeps none.
func kept(pod *corev1.Pod) []nodeprobe.ContainerLiveness {
	old, err := nodeprobe.ReadProbeContext(pod.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	if err != nil {
		return nil
	}
	var out []nodeprobe.ContainerLiveness
	for _, e := range old {
		for i := range pod.Spec.Containers {
			if c := &pod.Spec.Containers[i]; c.Name == e.Name && c.LivenessProbe == nil && e.LivenessProbe != nil {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// escape is a JSON pointer's escaping of one path element.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// ConditionName names the matchCondition that sends only opted-in pods.
const ConditionName = "enhanced-liveness"

// Expression holds for a pod annotated apps.kruise.io/using-enhanced-liveness: "true"; false,
// never an error, for a null object. The owner check is the handler's (Applies): CEL over
// ownerReferences buys nothing, the annotation already keeps every other pod away.
const Expression = `object != null && has(object.metadata.annotations) && '` + appsv1alpha1.UsingEnhancedLivenessAnnotation +
	`' in object.metadata.annotations && object.metadata.annotations['` + appsv1alpha1.UsingEnhancedLivenessAnnotation + `'] == 'true'`

// MatchConditions are the webhook's matchConditions (all must hold): no pod of kube-system or of
// kruise's namespace, and only opted-in pods.
func MatchConditions(kruiseNamespace string) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		podscope.Condition(kruiseNamespace),
		{Name: ConditionName, Expression: Expression},
	}
}
