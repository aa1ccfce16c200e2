package spread

// TEMPORARY: the parts of wsadmit's contract (COMMON.md) this branch builds on, until branch
// wsadmit is merged; deleted by the merge commit.

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
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
