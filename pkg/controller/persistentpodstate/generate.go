package persistentpodstate

import (
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// GeneratedWeight is the weight of the preferred term of a generated PersistentPodState, as
// OpenKruise's.
const GeneratedWeight = 100

// GeneratedSpec is the spec of the PersistentPodState a workload asks for by annotation
// (kruise.io/auto-generate-persistent-pod-state "true" and at least one of the required and
// preferred topology annotations, comma-separated node label keys; optionally
// kruise.io/persistent-pod-annotations); false when it asks for none. ref names the workload.
// Keys are trimmed and empty ones skipped (OpenKruise keeps them as written, which a stray space
// turns into a key no node has).
func GeneratedSpec(ref appsv1alpha1.TargetReference, annotations map[string]string) (appsv1alpha1.PersistentPodStateSpec, bool) {
	if annotations[appsv1alpha1.AnnotationAutoGeneratePersistentPodState] != "true" {
		return appsv1alpha1.PersistentPodStateSpec{}, false
	}
	required := splitKeys(annotations[appsv1alpha1.AnnotationRequiredPersistentTopology])
	preferred := splitKeys(annotations[appsv1alpha1.AnnotationPreferredPersistentTopology])
	if len(required) == 0 && len(preferred) == 0 {
		return appsv1alpha1.PersistentPodStateSpec{}, false
	}
	spec := appsv1alpha1.PersistentPodStateSpec{TargetReference: ref}
	if len(required) > 0 {
		spec.RequiredPersistentTopology = &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: required}
	}
	if len(preferred) > 0 {
		spec.PreferredPersistentTopology = []appsv1alpha1.PreferredTopologyTerm{{
			Weight: GeneratedWeight, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: preferred},
		}}
	}
	for _, k := range splitKeys(annotations[appsv1alpha1.AnnotationPersistentPodAnnotations]) {
		spec.PersistentPodAnnotations = append(spec.PersistentPodAnnotations, appsv1alpha1.PersistentPodAnnotation{Key: k})
	}
	return spec, true
}

func splitKeys(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// GenerateAction is what is done about a workload's generated PersistentPodState.
type GenerateAction int

const (
	// GenerateNothing: it is as it should be, or not ours to touch.
	GenerateNothing GenerateAction = iota
	// GenerateCreate: create it.
	GenerateCreate
	// GenerateUpdate: set its spec to the generated one.
	GenerateUpdate
	// GenerateDelete: the workload no longer asks for it.
	GenerateDelete
	// GenerateConflict: a PersistentPodState of that name exists that the workload does not
	// control; it is left alone (OpenKruise would overwrite or delete it).
	GenerateConflict
)

// KeepRetention is want with the existing object's retention policy: the annotations say nothing
// about it, so a user may set it on the generated object and it stays (OpenKruise, which looks at
// the generated object only when the annotations change, keeps it too in practice).
func KeepRetention(want appsv1alpha1.PersistentPodStateSpec, existing *appsv1alpha1.PersistentPodState) appsv1alpha1.PersistentPodStateSpec {
	if existing != nil {
		want.PersistentPodStateRetentionPolicy = existing.Spec.PersistentPodStateRetentionPolicy
	}
	return want
}

// DecideGenerated compares what the workload (uid) asks for (want, ok from GeneratedSpec, with
// KeepRetention applied) with the existing PersistentPodState of its name (nil when none).
func DecideGenerated(uid string, want appsv1alpha1.PersistentPodStateSpec, ok bool, existing *appsv1alpha1.PersistentPodState) GenerateAction {
	if existing == nil {
		if ok {
			return GenerateCreate
		}
		return GenerateNothing
	}
	ref := metav1.GetControllerOfNoCopy(existing)
	if ref == nil || string(ref.UID) != uid {
		if ok {
			return GenerateConflict
		}
		return GenerateNothing
	}
	if !ok {
		if existing.DeletionTimestamp != nil {
			return GenerateNothing
		}
		return GenerateDelete
	}
	if sameSpec(&existing.Spec, &want) {
		return GenerateNothing
	}
	return GenerateUpdate
}

func sameSpec(a, b *appsv1alpha1.PersistentPodStateSpec) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	for _, s := range []*appsv1alpha1.PersistentPodStateSpec{x, y} {
		if s.PersistentPodStateRetentionPolicy == "" {
			s.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenScaled
		}
		if len(s.PersistentPodAnnotations) == 0 {
			s.PersistentPodAnnotations = nil
		}
		if len(s.PreferredPersistentTopology) == 0 {
			s.PreferredPersistentTopology = nil
		}
	}
	return apiequality.Semantic.DeepEqual(x, y)
}
