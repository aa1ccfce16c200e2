package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// cloneSetFiller fills CloneSets with random values, the pod template and
// claim templates kept small (they convert as they are).
func cloneSetFiller(seed int64) *randfill.Filler {
	return newFiller(seed).Funcs(
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			t.Labels = map[string]string{"app": c.String(5)}
			t.Spec.Containers = []corev1.Container{{Name: "main", Image: c.String(10)}}
		},
		func(p *corev1.PersistentVolumeClaim, c randfill.Continue) { p.Name = c.String(5) },
		func(t *CloneSetUpdateStrategyType, c randfill.Continue) {
			all := []CloneSetUpdateStrategyType{"", RecreateCloneSetUpdateStrategyType, InPlaceIfPossibleCloneSetUpdateStrategyType,
				InPlaceOnlyCloneSetUpdateStrategyType, OnDeleteCloneSetUpdateStrategyType, CloneSetUpdateStrategyType(c.String(4))}
			*t = all[c.Intn(len(all))]
		},
		func(t *v1beta1.CloneSetUpdateStrategyType, c randfill.Continue) {
			all := []v1beta1.CloneSetUpdateStrategyType{"", v1beta1.RollingUpdateCloneSetUpdateStrategyType,
				v1beta1.OnDeleteCloneSetUpdateStrategyType, v1beta1.CloneSetUpdateStrategyType(c.String(4))}
			*t = all[c.Intn(len(all))]
		},
		func(t *v1beta1.CloneSetPodUpdateStrategyType, c randfill.Continue) {
			all := []v1beta1.CloneSetPodUpdateStrategyType{"", v1beta1.RecreateCloneSetPodUpdateStrategyType,
				v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType}
			*t = all[c.Intn(len(all))]
		},
		// The label and annotations that convert to fields, with values
		// that do and do not.
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			c.FillNoCustom(m)
			pick := func(vals ...string) (string, bool) {
				i := c.Intn(len(vals) + 1)
				return append(vals, "")[i], i < len(vals)
			}
			set := func(mp *map[string]string, key string, vals ...string) {
				if v, ok := pick(vals...); ok {
					if *mp == nil {
						*mp = map[string]string{}
					}
					(*mp)[key] = v
				}
			}
			set(&m.Labels, CloneSetScalingExcludePreparingDeleteKey, "true", "false", "yes")
			set(&m.Annotations, ImagePreDownloadParallelismKey, "2", "30%", "007", "x")
			set(&m.Annotations, ImagePreDownloadTimeoutSecondsKey, "600", "0", "-1", "9999999999")
			set(&m.Annotations, ImagePreDownloadMinUpdatedReadyPods, "5", "0", "")
		},
	)
}

func TestCloneSetRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := cloneSetFiller(int64(i))

		alpha := &CloneSet{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "CloneSet"}
		roundTrip(t, alpha, CloneSetToV1beta1, CloneSetFromV1beta1)

		beta := &v1beta1.CloneSet{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "CloneSet"}
		roundTrip(t, beta, CloneSetFromV1beta1, CloneSetToV1beta1)
	}
}

func TestCloneSetConversionDoesNotAlias(t *testing.T) {
	alpha := &CloneSet{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ImagePreDownloadParallelismKey: "2"}},
		Spec:       CloneSetSpec{ScaleStrategy: CloneSetScaleStrategy{PodsToDelete: []string{"a"}}},
	}
	saved := alpha.DeepCopy()
	beta := CloneSetToV1beta1(alpha)
	beta.Spec.ScaleStrategy.PodsToDelete[0] = "changed"
	assert.Equal(t, saved, alpha)
}

// defaulted returns a v1alpha1 CloneSet as the v1alpha1 schema defaults it.
func defaulted(typ CloneSetUpdateStrategyType) *CloneSet {
	return &CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: CloneSetSpec{
			Replicas: ptr.To[int32](1), RevisionHistoryLimit: ptr.To[int32](10),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: CloneSetUpdateStrategy{
				Type: typ, Partition: ptr.To(intstr.FromInt32(0)),
				MaxUnavailable: ptr.To(intstr.FromString("20%")), MaxSurge: ptr.To(intstr.FromInt32(0)),
			},
		},
	}
}

// Objects as the schemas default them convert as OpenKruise converts them,
// with no helper annotation.
func TestCloneSetConvertsAsOpenKruise(t *testing.T) {
	for _, tc := range []struct {
		alpha  CloneSetUpdateStrategyType
		beta   v1beta1.CloneSetUpdateStrategyType
		policy v1beta1.CloneSetPodUpdateStrategyType
	}{
		{RecreateCloneSetUpdateStrategyType, v1beta1.RollingUpdateCloneSetUpdateStrategyType, v1beta1.RecreateCloneSetPodUpdateStrategyType},
		{InPlaceIfPossibleCloneSetUpdateStrategyType, v1beta1.RollingUpdateCloneSetUpdateStrategyType, v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType},
		{InPlaceOnlyCloneSetUpdateStrategyType, v1beta1.RollingUpdateCloneSetUpdateStrategyType, v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType},
		{OnDeleteCloneSetUpdateStrategyType, v1beta1.OnDeleteCloneSetUpdateStrategyType, v1beta1.RecreateCloneSetPodUpdateStrategyType},
	} {
		t.Run(string(tc.alpha), func(t *testing.T) {
			alpha := defaulted(tc.alpha)
			beta := CloneSetToV1beta1(alpha)
			assert.Nil(t, beta.Annotations)
			assert.Equal(t, tc.beta, beta.Spec.UpdateStrategy.Type)
			require.NotNil(t, beta.Spec.UpdateStrategy.RollingUpdate)
			ru := beta.Spec.UpdateStrategy.RollingUpdate
			assert.Equal(t, tc.policy, ru.PodUpdatePolicy)
			assert.Equal(t, "20%", ru.MaxUnavailable.String())
			assert.True(t, beta.Spec.ScaleStrategy.EnablePVCReuse, "v1alpha1 reuses claims unless disablePVCReuse")

			back := CloneSetFromV1beta1(beta)
			assert.Nil(t, back.Annotations)
			assert.Equal(t, alpha.Spec, back.Spec)
		})
	}
}

func TestCloneSetScaleStrategyConversion(t *testing.T) {
	alpha := defaulted(RecreateCloneSetUpdateStrategyType)
	alpha.Labels = map[string]string{CloneSetScalingExcludePreparingDeleteKey: "true", "app": "web"}
	alpha.Spec.ScaleStrategy.DisablePVCReuse = true
	beta := CloneSetToV1beta1(alpha)
	assert.True(t, beta.Spec.ScaleStrategy.ExcludePreparingDelete)
	assert.False(t, beta.Spec.ScaleStrategy.EnablePVCReuse)
	raw, err := json.Marshal(beta.Spec.ScaleStrategy)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"enablePVCReuse":false`, "written, or the schema default adds it at the next write and raises generation")
	assert.Equal(t, map[string]string{"app": "web"}, beta.Labels, "the field replaces the label")
	assert.Equal(t, alpha, CloneSetFromV1beta1(beta).withTypeMeta(alpha.TypeMeta))

	// A v1beta1 CloneSet that excludes PreparingDelete pods gets the label.
	beta = &v1beta1.CloneSet{Spec: v1beta1.CloneSetSpec{ScaleStrategy: v1beta1.CloneSetScaleStrategy{ExcludePreparingDelete: true}}}
	alpha = CloneSetFromV1beta1(beta)
	assert.Equal(t, "true", alpha.Labels[CloneSetScalingExcludePreparingDeleteKey])
	assert.True(t, alpha.Spec.ScaleStrategy.DisablePVCReuse, "v1beta1 does not reuse claims by default")
	assert.NotContains(t, alpha.Annotations, CloneSetV1beta1StrategiesAnnotation)
}

func TestCloneSetPreDownloadConversion(t *testing.T) {
	alpha := defaulted(InPlaceIfPossibleCloneSetUpdateStrategyType)
	alpha.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 10}
	alpha.Annotations = map[string]string{
		ImagePreDownloadParallelismKey: "30%", ImagePreDownloadTimeoutSecondsKey: "300",
		ImagePreDownloadMinUpdatedReadyPods: "five", "other": "x",
	}
	beta := CloneSetToV1beta1(alpha)
	ips := beta.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy
	require.NotNil(t, ips)
	assert.Equal(t, pub.InPlaceUpdateStrategy{
		GracePeriodSeconds: 10, ImagePreDownloadParallelism: ptr.To(intstr.FromString("30%")), ImagePreDownloadTimeoutSeconds: ptr.To[int32](300),
	}, *ips)
	assert.Equal(t, map[string]string{ImagePreDownloadMinUpdatedReadyPods: "five", "other": "x"}, beta.Annotations,
		"a value the field does not take stays an annotation")

	back := CloneSetFromV1beta1(beta)
	assert.Equal(t, alpha.Annotations, back.Annotations)
	assert.Equal(t, alpha.Spec, back.Spec)
}

// What v1alpha1 cannot say travels in an annotation, and is dropped when the
// object no longer says what it did.
func TestCloneSetStrategiesKeptInAnnotation(t *testing.T) {
	beta := &v1beta1.CloneSet{Spec: v1beta1.CloneSetSpec{UpdateStrategy: v1beta1.CloneSetUpdateStrategy{
		Type:          v1beta1.OnDeleteCloneSetUpdateStrategyType,
		RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType},
	}}}
	alpha := CloneSetFromV1beta1(beta)
	assert.Equal(t, OnDeleteCloneSetUpdateStrategyType, alpha.Spec.UpdateStrategy.Type)
	require.Contains(t, alpha.Annotations, CloneSetV1beta1StrategiesAnnotation)
	back := CloneSetToV1beta1(alpha)
	assert.Equal(t, beta.Spec, back.Spec)
	assert.Empty(t, back.Annotations)

	// Edited as v1alpha1: the kept strategies no longer apply.
	alpha.Spec.UpdateStrategy.Type = InPlaceOnlyCloneSetUpdateStrategyType
	edited := CloneSetToV1beta1(alpha)
	assert.Equal(t, v1beta1.RollingUpdateCloneSetUpdateStrategyType, edited.Spec.UpdateStrategy.Type)
	assert.Equal(t, v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType, edited.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy)
	assert.Empty(t, edited.Annotations)

	// A v1alpha1 field v1beta1 reads differently: set in inPlaceUpdateStrategy, with no annotation.
	a := defaulted(InPlaceOnlyCloneSetUpdateStrategyType)
	a.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](3)}
	b := CloneSetToV1beta1(a)
	assert.Contains(t, b.Annotations, CloneSetV1alpha1StrategiesAnnotation)
	assert.Equal(t, ptr.To[int32](3), b.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy.ImagePreDownloadMinUpdatedReadyPods)
	assert.Equal(t, a, CloneSetFromV1beta1(b).withTypeMeta(a.TypeMeta))
}

// withTypeMeta sets c's TypeMeta, for comparing with an object that has none.
func (c *CloneSet) withTypeMeta(tm metav1.TypeMeta) *CloneSet {
	c.TypeMeta = tm
	return c
}
