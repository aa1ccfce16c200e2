package spread

import (
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// VersionIgnored is the versionedSubsetStatuses key of pods whose workload has no versions the
// spread tells apart (OpenKruise's key).
const VersionIgnored = "versionIgnored"

// PodVersion is the key of status.versionedSubsetStatuses for the pod: pod-template-hash for
// Deployment/ReplicaSet pods, the controller-revision-hash for CloneSet pods (kruise extension),
// VersionIgnored ("versionIgnored") otherwise. ref is the WorkloadSpread's target.
func PodVersion(pod *corev1.Pod, ref appsv1alpha1.TargetReference) string {
	switch {
	case isKind(ref.APIVersion, ref.Kind, "apps", "Deployment"), isKind(ref.APIVersion, ref.Kind, "apps", "ReplicaSet"):
		if v := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; v != "" {
			return v
		}
	case isKind(ref.APIVersion, ref.Kind, appsv1alpha1.SchemeGroupVersion.Group, "CloneSet"):
		// The revision label is "<cloneset>-<hash>"; the hash alone is the key, as OpenKruise
		// keys it when versioned status is enabled for CloneSets.
		if v := pod.Labels[appsv1.ControllerRevisionHashLabelKey]; v != "" {
			return v[strings.LastIndex(v, "-")+1:]
		}
	}
	return VersionIgnored
}

// Matched decodes the pod's MatchedWorkloadSpreadAnnotation; false when it is absent or malformed.
func Matched(pod *corev1.Pod) (*appsv1alpha1.InjectWorkloadSpread, bool) {
	s := pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation]
	if s == "" {
		return nil, false
	}
	m := &appsv1alpha1.InjectWorkloadSpread{}
	if err := json.Unmarshal([]byte(s), m); err != nil || m.Name == "" {
		return nil, false
	}
	return m, true
}

// SetMatched encodes m into the pod's MatchedWorkloadSpreadAnnotation.
func SetMatched(pod *corev1.Pod, m appsv1alpha1.InjectWorkloadSpread) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", appsv1alpha1.MatchedWorkloadSpreadAnnotation, err)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] = string(b)
	return nil
}
