package conversion

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// What OpenKruise's v1alpha1 clients would erase: an Advanced StatefulSet's
// v1beta1-only fields. Through the webhook they travel in an annotation and
// come back, also after a v1alpha1 client scaled the object.
func TestStatefulSetBetaFieldsSurviveV1alpha1(t *testing.T) {
	e := newEnv(t, Options{})
	sts := &v1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: beta, Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "uid-db", Annotations: map[string]string{"team": "data"}},
		Spec: v1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db",
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("4-6")},
			Ordinals:        &v1beta1.StatefulSetOrdinals{Start: 3},
			PersistentVolumeClaimRetentionPolicy: &v1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1beta1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: v1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
		Status: v1beta1.StatefulSetStatus{Replicas: 3, UpdatedReadyReplicas: 2},
	}

	alphaRaw := e.convert(alpha, raw(t, sts))[0].Raw
	assert.NotContains(t, string(alphaRaw), `"reserveOrdinals":`, "v1alpha1 has no reserveOrdinals")
	var a v1alpha1.StatefulSet
	require.NoError(t, json.Unmarshal(alphaRaw, &a))
	assert.Equal(t, alpha, a.APIVersion)
	assert.Equal(t, sts.UID, a.UID, "the API server refuses a conversion that changes the UID")
	assert.Equal(t, int32(2), a.Status.UpdatedReadyReplicas)
	assert.JSONEq(t, `{"reserveOrdinals":[1,"4-6"],"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete","whenScaled":"Retain"},"ordinals":{"start":3}}`,
		a.Annotations[v1alpha1.StatefulSetV1beta1FieldsAnnotation])

	a.Spec.Replicas = ptr.To[int32](5) // a v1alpha1 client scales it and writes it back
	var updated v1beta1.StatefulSet
	require.NoError(t, json.Unmarshal(e.convert(beta, raw(t, &a))[0].Raw, &updated))
	want := sts.DeepCopy()
	want.Spec.Replicas = ptr.To[int32](5)
	assert.Equal(t, want, &updated)
}
