package persistentpodstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func TestGeneratedSpec(t *testing.T) {
	ref := appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}
	_, ok := GeneratedSpec(ref, map[string]string{appsv1alpha1.AnnotationRequiredPersistentTopology: zone})
	assert.False(t, ok, "without the auto-generate annotation")
	_, ok = GeneratedSpec(ref, map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true"})
	assert.False(t, ok, "without any topology")
	_, ok = GeneratedSpec(ref, map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true", appsv1alpha1.AnnotationRequiredPersistentTopology: " , "})
	assert.False(t, ok, "only empty keys")

	spec, ok := GeneratedSpec(ref, map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology:     host + ", " + zone,
		appsv1alpha1.AnnotationPreferredPersistentTopology:    zone,
		appsv1alpha1.AnnotationPersistentPodAnnotations:       "ip,mac",
	})
	assert.True(t, ok)
	assert.Equal(t, appsv1alpha1.PersistentPodStateSpec{
		TargetReference:             ref,
		RequiredPersistentTopology:  &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{host, zone}},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 100, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}}}},
		PersistentPodAnnotations:    []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}, {Key: "mac"}},
	}, spec)
}

func TestKeepRetention(t *testing.T) {
	want := requiredSpec(zone)
	existing := &appsv1alpha1.PersistentPodState{Spec: requiredSpec(host)}
	existing.Spec.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted
	got := KeepRetention(want, existing)
	assert.Equal(t, appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted, got.PersistentPodStateRetentionPolicy, "the user's policy stays")
	assert.Equal(t, want.RequiredPersistentTopology, got.RequiredPersistentTopology)
	assert.Equal(t, want, KeepRetention(want, nil))
	// A user's WhenDeleted on the generated object is no reason to update it.
	existing.Spec = got
	existing.OwnerReferences = []metav1.OwnerReference{{UID: "u1", Controller: ptr.To(true)}}
	assert.Equal(t, GenerateNothing, DecideGenerated("u1", KeepRetention(want, existing), true, existing))
}

func TestDecideGenerated(t *testing.T) {
	ref := appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}
	want := requiredSpec(zone)
	owned := func(uid string, spec appsv1alpha1.PersistentPodStateSpec) *appsv1alpha1.PersistentPodState {
		return &appsv1alpha1.PersistentPodState{
			ObjectMeta: metav1.ObjectMeta{Name: "web", OwnerReferences: []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: "web", UID: "u1", Controller: ptr.To(uid == "u1")}}},
			Spec:       spec,
		}
	}
	withPolicy := want
	withPolicy.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenScaled
	other := requiredSpec(host)
	tests := []struct {
		name     string
		ok       bool
		existing *appsv1alpha1.PersistentPodState
		want     GenerateAction
	}{
		{"asked, none: create", true, nil, GenerateCreate},
		{"not asked, none: nothing", false, nil, GenerateNothing},
		{"asked, same (default policy spelled out): nothing", true, owned("u1", withPolicy), GenerateNothing},
		{"asked, differs: update", true, owned("u1", other), GenerateUpdate},
		{"no longer asked: delete", false, owned("u1", want), GenerateDelete},
		{"asked, someone else's of that name: conflict, left alone", true, owned("", other), GenerateConflict},
		{"not asked, someone else's: never deleted", false, owned("", other), GenerateNothing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, DecideGenerated("u1", want, tc.ok, tc.existing))
		})
	}
}
