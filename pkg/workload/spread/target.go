package spread

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// Workload is what a spread needs of its target, read from the target object (unstructured, any kind).
type Workload struct {
	// Ref names the workload (its apiVersion as read).
	Ref appsv1alpha1.TargetReference
	// UID of the workload object.
	UID types.UID
	// Replicas is the total that percentages of maxReplicas refer to.
	Replicas int32
	// Selector picks the workload's pods the spread manages (the workload's selector ANDed with
	// the targetFilter's).
	Selector labels.Selector
	// Template is the workload's pod template; nil when the object has none.
	Template *corev1.PodTemplateSpec
}

// WorkloadOf reads replicas (spec.replicas; batch Job: spec.parallelism; targetFilter.replicasPathList
// summed), selector (spec.selector, ANDed with targetFilter.selector) and spec.template of obj.
// A kind without spec.replicas counts 1, as the API server defaults the built-in ones.
func WorkloadOf(obj *unstructured.Unstructured, filter *appsv1alpha1.TargetFilter) (*Workload, error) {
	w := &Workload{
		Ref: appsv1alpha1.TargetReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName()},
		UID: obj.GetUID(),
	}
	replicas, err := replicasOf(obj, filter)
	if err != nil {
		return nil, err
	}
	w.Replicas = replicas

	sel := labels.Everything()
	if raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "selector"); ok {
		if sel, err = selectorFrom(raw); err != nil {
			return nil, fmt.Errorf("%s %s: spec.selector: %w", w.Ref.Kind, w.Ref.Name, err)
		}
	}
	if filter != nil && filter.Selector != nil {
		extra, err := metav1.LabelSelectorAsSelector(filter.Selector)
		if err != nil {
			return nil, fmt.Errorf("targetFilter.selector: %w", err)
		}
		sel = and(sel, extra)
	}
	w.Selector = sel

	if raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "template"); ok {
		t := &corev1.PodTemplateSpec{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, t); err != nil {
			return nil, fmt.Errorf("%s %s: spec.template: %w", w.Ref.Kind, w.Ref.Name, err)
		}
		w.Template = t
	}
	return w, nil
}

func replicasOf(obj *unstructured.Unstructured, filter *appsv1alpha1.TargetFilter) (int32, error) {
	if filter != nil && len(filter.ReplicasPathList) > 0 {
		var sum int64
		for _, p := range filter.ReplicasPathList {
			v, err := intAt(obj.Object, p)
			if err != nil {
				return 0, fmt.Errorf("targetFilter.replicasPathList %q: %w", p, err)
			}
			sum += v
		}
		return clamp32(sum), nil
	}
	field := "replicas"
	if gv, err := schema.ParseGroupVersion(obj.GetAPIVersion()); err == nil && gv.Group == "batch" && obj.GetKind() == "Job" {
		field = "parallelism"
	}
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", field)
	if err != nil || !ok || v == nil {
		return 1, nil
	}
	n, err := toInt(v)
	if err != nil {
		return 0, fmt.Errorf("spec.%s: %w", field, err)
	}
	return clamp32(n), nil
}

// intAt reads the integer at a dot path; numeric segments index lists. A missing value is 0, as
// OpenKruise counts it.
func intAt(obj map[string]any, path string) (int64, error) {
	var cur any = obj
	for _, seg := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return 0, nil
			}
			cur = c[i]
		default:
			return 0, nil
		}
		if cur == nil {
			return 0, nil
		}
	}
	return toInt(cur)
}

func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case int:
		return int64(n), nil
	case float64:
		return int64(n), nil
	default:
		return 0, fmt.Errorf("%v is not an integer", v)
	}
}

func clamp32(v int64) int32 {
	switch {
	case v < 0:
		return 0
	case v > 1<<31-1:
		return 1<<31 - 1
	}
	return int32(v)
}

func selectorFrom(raw map[string]any) (labels.Selector, error) {
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(ls)
}

func and(a, b labels.Selector) labels.Selector {
	reqs, _ := b.Requirements()
	return a.Add(reqs...)
}

// OwnerRef returns the workload a pod belongs to by its controller ownerReference; a ReplicaSet owned
// by a Deployment resolves to the Deployment through rsOwner (nil result: not owned).
func OwnerRef(pod *corev1.Pod, rsOwner func(namespace, name string) *metav1.OwnerReference) *appsv1alpha1.TargetReference {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil
	}
	if isKind(ref.APIVersion, ref.Kind, "apps", "ReplicaSet") && rsOwner != nil {
		if up := rsOwner(pod.Namespace, ref.Name); up != nil && isKind(up.APIVersion, up.Kind, "apps", "Deployment") {
			ref = up
		}
	}
	return &appsv1alpha1.TargetReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
}

// RefersTo reports whether ws.spec.targetRef names ref (group and kind compared, version ignored).
func RefersTo(ws *appsv1alpha1.WorkloadSpread, ref appsv1alpha1.TargetReference) bool {
	t := ws.Spec.TargetReference
	return t != nil && t.Name == ref.Name && ownership.SameKind(t.APIVersion, t.Kind, ref.APIVersion, ref.Kind)
}

func isKind(apiVersion, kind, group, want string) bool {
	return ownership.SameKind(apiVersion, kind, group+"/v1", want)
}
