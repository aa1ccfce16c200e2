package spread

// TEMPORARY: the parts of wsadmit's contract (COMMON.md) this branch builds on, until branch
// wsadmit is merged; deleted by the merge commit.

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

const VersionIgnored = "versionIgnored"

func Matched(pod *corev1.Pod) (*appsv1alpha1.InjectWorkloadSpread, bool) {
	v, ok := pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation]
	if !ok {
		return nil, false
	}
	var in appsv1alpha1.InjectWorkloadSpread
	if json.Unmarshal([]byte(v), &in) != nil {
		return nil, false
	}
	return &in, true
}

func PodVersion(pod *corev1.Pod, ref appsv1alpha1.TargetReference) string {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	switch {
	case gv.Group == "apps" && (ref.Kind == "Deployment" || ref.Kind == "ReplicaSet"):
		if v := pod.Labels["pod-template-hash"]; v != "" {
			return v
		}
	case gv.Group == "apps.kruise.io" && ref.Kind == "CloneSet":
		if v := pod.Labels["controller-revision-hash"]; v != "" {
			return v
		}
	}
	return VersionIgnored
}

func Fits(pod *corev1.Pod, node *corev1.Node, subset *appsv1alpha1.WorkloadSpreadSubset) bool {
	return node != nil
}

type Workload struct {
	Ref      appsv1alpha1.TargetReference
	UID      types.UID
	Replicas int32
	Selector labels.Selector
	Template *corev1.PodTemplateSpec
}

func WorkloadOf(obj *unstructured.Unstructured, filter *appsv1alpha1.TargetFilter) (*Workload, error) {
	r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if obj.GetKind() == "Job" {
		r, _, _ = unstructured.NestedInt64(obj.Object, "spec", "parallelism")
	}
	sel := labels.Everything()
	if m, ok, _ := unstructured.NestedMap(obj.Object, "spec", "selector"); ok {
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
			return nil, err
		}
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return nil, err
		}
		sel = s
	}
	return &Workload{Ref: appsv1alpha1.TargetReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName()},
		UID: obj.GetUID(), Replicas: int32(r), Selector: sel}, nil
}

func OwnerRef(pod *corev1.Pod, rsOwner func(namespace, name string) *metav1.OwnerReference) *appsv1alpha1.TargetReference {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil
	}
	if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.APIVersion, "apps/") && rsOwner != nil {
		if o := rsOwner(pod.Namespace, ref.Name); o != nil && o.Kind == "Deployment" {
			return &appsv1alpha1.TargetReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name}
		}
	}
	return &appsv1alpha1.TargetReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
}

func RefersTo(ws *appsv1alpha1.WorkloadSpread, ref appsv1alpha1.TargetReference) bool {
	t := ws.Spec.TargetReference
	if t == nil || t.Kind != ref.Kind || t.Name != ref.Name {
		return false
	}
	a, _ := schema.ParseGroupVersion(t.APIVersion)
	b, _ := schema.ParseGroupVersion(ref.APIVersion)
	return a.Group == b.Group
}
