package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// statefulSetFiller fills StatefulSets with random values, the pod
// template and claim templates kept small (they convert as they are).
func statefulSetFiller(seed int64) *randfill.Filler {
	return newFiller(seed).Funcs(
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			t.Labels = map[string]string{"app": c.String(5)}
			t.Spec.Containers = []corev1.Container{{Name: "main", Image: c.String(10)}}
		},
		func(p *corev1.PersistentVolumeClaim, c randfill.Continue) { p.Name = c.String(5) },
	)
}

// alphaFieldsAnnotations are values of StatefulSetV1beta1FieldsAnnotation a
// v1alpha1 object may carry: kruise's own and others, which must stay.
var alphaFieldsAnnotations = []string{
	`{"reserveOrdinals":[1,"3-5"],"ordinals":{"start":2}}`,
	`{"lifecycle":{"preDelete":{"markPodNotReady":true}},"scaleStrategy":{}}`,
	`{"volumeClaimUpdateStrategy":{"type":"OnPodRollingUpdate"}}`,
	`{ "ordinals": {"start": 2} }`,
	`{"ordinals":{"start":2},"unknown":1}`,
	`{}`, `null`, `[]`, `garbage`, ``,
}

func TestStatefulSetRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := statefulSetFiller(int64(i))

		alpha := &StatefulSet{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "StatefulSet"}
		if j := i % (len(alphaFieldsAnnotations) + 1); j < len(alphaFieldsAnnotations) {
			putKeys(&alpha.Annotations, map[string]string{StatefulSetV1beta1FieldsAnnotation: alphaFieldsAnnotations[j]})
		}
		roundTrip(t, alpha, StatefulSetToV1beta1, StatefulSetFromV1beta1)

		beta := &v1beta1.StatefulSet{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "StatefulSet"}
		roundTrip(t, beta, StatefulSetFromV1beta1, StatefulSetToV1beta1)
	}
}

func TestStatefulSetConversionDoesNotAlias(t *testing.T) {
	alpha := &StatefulSet{Spec: StatefulSetSpec{UpdateStrategy: StatefulSetUpdateStrategy{
		RollingUpdate: &RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)},
	}}}
	saved := alpha.DeepCopy()
	beta := StatefulSetToV1beta1(alpha)
	*beta.Spec.UpdateStrategy.RollingUpdate.Partition = 5
	assert.Equal(t, saved, alpha)

	b := &v1beta1.StatefulSet{Spec: v1beta1.StatefulSetSpec{ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(1)}}}
	savedBeta := b.DeepCopy()
	a := StatefulSetFromV1beta1(b)
	a.Annotations[StatefulSetV1beta1FieldsAnnotation] = "changed"
	assert.Equal(t, savedBeta, b)
}

// statefulSet returns a v1beta1 StatefulSet with only the fields both
// versions have, as the schema defaults them.
func statefulSet() *v1beta1.StatefulSet {
	return &v1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Annotations: map[string]string{"team": "data"}},
		Spec: v1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), RevisionHistoryLimit: ptr.To[int32](10), ServiceName: "db",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: v1beta1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &v1beta1.RollingUpdateStatefulSetStrategy{
					Partition: ptr.To[int32](1), MaxUnavailable: ptr.To(intstr.FromString("50%")),
					PodUpdatePolicy: v1beta1.InPlaceIfPossiblePodUpdateStrategyType, MinReadySeconds: ptr.To[int32](0),
					UnorderedUpdate: &v1beta1.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{
						OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "rank"}},
					}},
				},
			},
		},
		Status: v1beta1.StatefulSetStatus{
			Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 1, UpdatedReadyReplicas: 1, UpdatedAvailableReplicas: 1,
			VolumeClaims: []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 3, CompatibleReadyReplicas: 2}},
			Conditions:   []appsv1.StatefulSetCondition{{Type: v1beta1.FailedCreatePod, Status: corev1.ConditionTrue, Reason: "quota"}},
		},
	}
}

// The fields both versions have convert field for field, with no helper
// annotation; the status, extensions included, as it is.
func TestStatefulSetSharedFieldsConvertAsTheyAre(t *testing.T) {
	beta := statefulSet()
	alpha := StatefulSetFromV1beta1(beta)
	assert.Equal(t, map[string]string{"team": "data"}, alpha.Annotations)
	assert.Equal(t, "apps.kruise.io/v1alpha1", alpha.APIVersion)
	ru := alpha.Spec.UpdateStrategy.RollingUpdate
	require.NotNil(t, ru)
	assert.Equal(t, InPlaceIfPossiblePodUpdateStrategyType, ru.PodUpdatePolicy)
	assert.Equal(t, ptr.To(intstr.FromString("50%")), ru.MaxUnavailable)
	assert.Equal(t, "rank", ru.UnorderedUpdate.PriorityStrategy.OrderPriority[0].OrderedKey)
	assert.Equal(t, appsv1.ParallelPodManagement, alpha.Spec.PodManagementPolicy)
	assert.Equal(t, []VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 3, CompatibleReadyReplicas: 2}}, alpha.Status.VolumeClaims)
	assert.Equal(t, int32(1), alpha.Status.UpdatedAvailableReplicas)
	assert.Equal(t, beta.Status.Conditions, alpha.Status.Conditions)
	assert.Equal(t, beta, StatefulSetToV1beta1(alpha))
}

// What OpenKruise's v1alpha1 clients would erase: the v1beta1-only fields
// ride in the annotation and come back, also after such a client changed
// the object.
func TestStatefulSetBetaFieldsSurviveAV1alpha1Update(t *testing.T) {
	beta := statefulSet()
	beta.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("4-6")}
	beta.Spec.Ordinals = &v1beta1.StatefulSetOrdinals{Start: 3}
	beta.Spec.PersistentVolumeClaimRetentionPolicy = &v1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: v1beta1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: v1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	beta.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	beta.Spec.ScaleStrategy = &v1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	beta.Spec.VolumeClaimUpdateStrategy.Type = v1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType

	alpha := StatefulSetFromV1beta1(beta)
	assert.JSONEq(t, `{"volumeClaimUpdateStrategy":{"type":"OnPodRollingUpdate"},"reserveOrdinals":[1,"4-6"],`+
		`"lifecycle":{"preDelete":{"labelsHandler":{"hold":"true"}}},"scaleStrategy":{"maxUnavailable":2},`+
		`"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete","whenScaled":"Retain"},"ordinals":{"start":3}}`,
		alpha.Annotations[StatefulSetV1beta1FieldsAnnotation])
	assert.Equal(t, "data", alpha.Annotations["team"])

	alpha.Spec.Replicas = ptr.To[int32](5) // a v1alpha1 client scales it
	want := beta.DeepCopy()
	want.Spec.Replicas = ptr.To[int32](5)
	assert.Equal(t, want, StatefulSetToV1beta1(alpha))
}

// An annotation of that name that kruise did not write (not its canonical
// JSON of set fields) is left as it is, on both sides.
func TestStatefulSetForeignAnnotationStays(t *testing.T) {
	for _, v := range []string{`{ "ordinals": {"start": 2} }`, `{"ordinals":{"start":2},"x":1}`, `{}`, `null`, `oops`} {
		alpha := StatefulSetFromV1beta1(statefulSet())
		alpha.Annotations[StatefulSetV1beta1FieldsAnnotation] = v
		beta := StatefulSetToV1beta1(alpha)
		assert.Equal(t, v, beta.Annotations[StatefulSetV1beta1FieldsAnnotation], v)
		assert.Nil(t, beta.Spec.Ordinals, v)
		assert.Equal(t, v, StatefulSetFromV1beta1(beta).Annotations[StatefulSetV1beta1FieldsAnnotation], v)
	}
}
