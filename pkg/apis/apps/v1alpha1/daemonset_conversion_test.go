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

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// daemonSetFiller fills DaemonSets with random values, the pod template kept
// small (it converts as it is).
func daemonSetFiller(seed int64) *randfill.Filler {
	return newFiller(seed).Funcs(
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			t.Labels = map[string]string{"app": c.String(5)}
			t.Spec.Containers = []corev1.Container{{Name: "main", Image: c.String(10)}}
		},
		func(t *DaemonSetRollingUpdateType, c randfill.Continue) {
			all := []DaemonSetRollingUpdateType{"", StandardDaemonSetRollingUpdateType, InPlaceIfPossibleDaemonSetRollingUpdateType,
				SurgingDaemonSetRollingUpdateType, DaemonSetRollingUpdateType(c.String(4))}
			*t = all[c.Intn(len(all))]
		},
		func(t *v1beta1.DaemonSetRollingUpdateType, c randfill.Continue) {
			all := []v1beta1.DaemonSetRollingUpdateType{"", v1beta1.StandardDaemonSetRollingUpdateType,
				v1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType, "Surging", v1beta1.DaemonSetRollingUpdateType(c.String(4))}
			*t = all[c.Intn(len(all))]
		},
		// The annotation that converts to a field, with values that do and do not.
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			c.FillNoCustom(m)
			vals := []string{"true", "false", "yes"}
			if i := c.Intn(len(vals) + 1); i < len(vals) {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[ProgressiveCreatePodAnnotation] = vals[i]
			}
		},
	)
}

func TestDaemonSetRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := daemonSetFiller(int64(i))

		alpha := &DaemonSet{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "DaemonSet"}
		roundTrip(t, alpha, DaemonSetToV1beta1, DaemonSetFromV1beta1)

		beta := &v1beta1.DaemonSet{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "DaemonSet"}
		roundTrip(t, beta, DaemonSetFromV1beta1, DaemonSetToV1beta1)
	}
}

func TestDaemonSetConversionDoesNotAlias(t *testing.T) {
	alpha := defaultedDaemonSet(SurgingDaemonSetRollingUpdateType)
	alpha.Spec.UpdateStrategy.RollingUpdate.MaxSurge, alpha.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil, nil
	alpha.Status.Conditions = []appsv1.DaemonSetCondition{{Type: "Ready", Status: corev1.ConditionTrue}}
	saved := alpha.DeepCopy()
	beta := DaemonSetToV1beta1(alpha)
	beta.Spec.UpdateStrategy.RollingUpdate.Selector.MatchLabels["role"] = "changed"
	beta.Status.Conditions[0].Reason = "changed"
	assert.Equal(t, saved, alpha)
}

// defaultedDaemonSet returns a v1alpha1 DaemonSet as the v1alpha1 schema
// defaults it, with maxUnavailable 1 (and a rollingUpdate selector).
func defaultedDaemonSet(typ DaemonSetRollingUpdateType) *DaemonSet {
	return &DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"},
		Spec: DaemonSetSpec{
			Selector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			BurstReplicas: ptr.To(intstr.FromInt32(250)), RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type: typ, MaxUnavailable: ptr.To(intstr.FromInt32(1)), Partition: ptr.To(intstr.FromString("50%")),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "edge"}},
				},
			},
		},
		Status: DaemonSetStatus{DesiredNumberScheduled: 3, NumberReady: 2, DaemonSetHash: "agent-5d8f"},
	}
}

// Objects as the schemas default them convert as OpenKruise converts them,
// with no helper annotation.
func TestDaemonSetConvertsAsOpenKruise(t *testing.T) {
	for _, typ := range []DaemonSetRollingUpdateType{StandardDaemonSetRollingUpdateType, InPlaceIfPossibleDaemonSetRollingUpdateType} {
		t.Run(string(typ), func(t *testing.T) {
			alpha := defaultedDaemonSet(typ)
			beta := DaemonSetToV1beta1(alpha)
			assert.Nil(t, beta.Annotations)
			assert.Nil(t, beta.Spec.ScaleStrategy)
			assert.Equal(t, v1beta1.RollingUpdateDaemonSetStrategyType, beta.Spec.UpdateStrategy.Type)
			ru := beta.Spec.UpdateStrategy.RollingUpdate
			require.NotNil(t, ru)
			assert.Equal(t, v1beta1.DaemonSetRollingUpdateType(typ), ru.Type)
			assert.Equal(t, "50%", ru.Partition.String())
			assert.Equal(t, "agent-5d8f", beta.Status.UpdateRevision, "daemonSetHash is updateRevision")
			assert.Equal(t, int32(3), beta.Status.DesiredNumberScheduled)

			back := DaemonSetFromV1beta1(beta)
			assert.Nil(t, back.Annotations)
			assert.Equal(t, alpha.Spec, back.Spec)
			assert.Equal(t, alpha.Status, back.Status)
		})
	}
}

// Surging is Standard with surge: v1beta1 gets the limits Surging defaults
// to, and v1alpha1 gets Surging back.
func TestDaemonSetSurgingConversion(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		maxSurge, maxUnavailable  *intstr.IntOrString
		wantSurge, wantUnavailabe string
	}{
		{"unset", nil, nil, "1", "0"},
		{"surge set", ptr.To(intstr.FromString("20%")), nil, "20%", "0"},
		{"both set", ptr.To(intstr.FromInt32(2)), ptr.To(intstr.FromInt32(0)), "2", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alpha := defaultedDaemonSet(SurgingDaemonSetRollingUpdateType)
			alpha.Spec.UpdateStrategy.RollingUpdate.MaxSurge, alpha.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = tc.maxSurge, tc.maxUnavailable
			beta := DaemonSetToV1beta1(alpha)
			ru := beta.Spec.UpdateStrategy.RollingUpdate
			assert.Equal(t, v1beta1.StandardDaemonSetRollingUpdateType, ru.Type)
			assert.Equal(t, tc.wantSurge, ru.MaxSurge.String())
			assert.Equal(t, tc.wantUnavailabe, ru.MaxUnavailable.String())
			assert.Contains(t, beta.Annotations, DaemonSetV1alpha1StrategiesAnnotation)
			assert.Equal(t, alpha, DaemonSetFromV1beta1(beta).withTypeMeta(alpha.TypeMeta))

			// Edited as v1beta1: the kept strategies no longer apply.
			ru.MaxSurge = ptr.To(intstr.FromInt32(3))
			edited := DaemonSetFromV1beta1(beta)
			assert.Equal(t, StandardDaemonSetRollingUpdateType, edited.Spec.UpdateStrategy.RollingUpdate.Type)
			assert.Equal(t, "3", edited.Spec.UpdateStrategy.RollingUpdate.MaxSurge.String())
			assert.Empty(t, edited.Annotations)
		})
	}
}

func TestDaemonSetPartitionedScalingConversion(t *testing.T) {
	alpha := defaultedDaemonSet(StandardDaemonSetRollingUpdateType)
	alpha.Annotations = map[string]string{ProgressiveCreatePodAnnotation: "true", "team": "infra"}
	beta := DaemonSetToV1beta1(alpha)
	require.NotNil(t, beta.Spec.ScaleStrategy)
	assert.True(t, beta.Spec.ScaleStrategy.PartitionedScaling)
	assert.Equal(t, map[string]string{"team": "infra"}, beta.Annotations, "the field replaces the annotation")
	assert.Equal(t, alpha, DaemonSetFromV1beta1(beta).withTypeMeta(alpha.TypeMeta))

	// Another value means false, and stays as it is.
	alpha.Annotations[ProgressiveCreatePodAnnotation] = "false"
	beta = DaemonSetToV1beta1(alpha)
	assert.Nil(t, beta.Spec.ScaleStrategy)
	assert.Equal(t, "false", beta.Annotations[ProgressiveCreatePodAnnotation])
	assert.NotContains(t, beta.Annotations, DaemonSetV1alpha1StrategiesAnnotation)

	// A v1beta1 DaemonSet with partitioned scaling gets the annotation.
	b := &v1beta1.DaemonSet{Spec: v1beta1.DaemonSetSpec{ScaleStrategy: &v1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}}}
	a := DaemonSetFromV1beta1(b)
	assert.Equal(t, map[string]string{ProgressiveCreatePodAnnotation: "true"}, a.Annotations)

	// One with scaleStrategy {} has no v1alpha1 form: it travels in the annotation.
	b.Spec.ScaleStrategy.PartitionedScaling = false
	a = DaemonSetFromV1beta1(b)
	assert.Contains(t, a.Annotations, DaemonSetV1beta1StrategiesAnnotation)
	back := DaemonSetToV1beta1(a)
	assert.Equal(t, b.Spec, back.Spec)
	assert.Empty(t, back.Annotations)
}

// withTypeMeta sets d's TypeMeta, for comparing with an object that has none.
func (d *DaemonSet) withTypeMeta(tm metav1.TypeMeta) *DaemonSet {
	d.TypeMeta = tm
	return d
}
