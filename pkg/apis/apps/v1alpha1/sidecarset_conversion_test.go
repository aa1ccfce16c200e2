package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// sidecarSetFiller fills SidecarSets with random values, the containers and
// volumes kept small (they convert as they are), and the namespace and the
// custom version label with values that do and do not convert to fields.
func sidecarSetFiller(seed int64) *randfill.Filler {
	pick := func(c randfill.Continue, vals ...string) string { return vals[c.Intn(len(vals))] }
	return newFiller(seed).Funcs(
		func(ct *corev1.Container, c randfill.Continue) {
			*ct = corev1.Container{Name: c.String(5), Image: c.String(10)}
		},
		func(v *corev1.Volume, c randfill.Continue) { v.Name = c.String(5) },
		func(s *SidecarSetSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			s.Namespace = pick(c, "", "", "team-a", c.String(6))
		},
		func(s *v1beta1.SidecarSetSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			s.CustomVersion = pick(c, "", "v1", c.String(4))
			if c.Bool() {
				s.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: pick(c, "team-a", "")}}
			}
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			c.FillNoCustom(m)
			if c.Bool() {
				if m.Labels == nil {
					m.Labels = map[string]string{}
				}
				m.Labels[SidecarSetCustomVersionLabel] = pick(c, "v1", "", "v2")
			}
		},
	)
}

func TestSidecarSetRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := sidecarSetFiller(int64(i))

		alpha := &SidecarSet{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "SidecarSet"}
		roundTrip(t, alpha, SidecarSetToV1beta1, SidecarSetFromV1beta1)

		beta := &v1beta1.SidecarSet{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "SidecarSet"}
		roundTrip(t, beta, SidecarSetFromV1beta1, SidecarSetToV1beta1)
	}
}

func TestSidecarSetConversionDoesNotAlias(t *testing.T) {
	alpha := &SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{SidecarSetCustomVersionLabel: "v1"}},
		Spec:       SidecarSetSpec{Containers: []SidecarContainer{{Container: corev1.Container{Name: "log", Image: "agent:1"}}}},
	}
	saved := alpha.DeepCopy()
	beta := SidecarSetToV1beta1(alpha)
	beta.Spec.Containers[0].Image = "changed"
	beta.Labels = map[string]string{"x": "y"}
	assert.Equal(t, saved, alpha)
}

// logAgent returns a v1alpha1 SidecarSet as the v1alpha1 schema defaults it.
func logAgent() *SidecarSet {
	return &SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Labels: map[string]string{"team": "infra"}},
		Spec: SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []SidecarContainer{{
				Container:         corev1.Container{Name: "log", Image: "agent:1"},
				UpgradeStrategy:   SidecarContainerUpgradeStrategy{UpgradeType: SidecarContainerColdUpgrade},
				ShareVolumePolicy: ShareVolumePolicy{Type: ShareVolumePolicyDisabled},
				TransferEnv:       []TransferEnvVar{{SourceContainerName: "app", EnvName: "TZ"}},
			}},
			UpdateStrategy: SidecarSetUpdateStrategy{
				Type: RollingUpdateSidecarSetStrategyType, Partition: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
		Status: SidecarSetStatus{MatchedPods: 3, UpdatedPods: 2, ReadyPods: 3, UpdatedReadyPods: 2, LatestRevision: "log-agent-abc"},
	}
}

// The two places the versions differ convert as OpenKruise converts them;
// what v1beta1 says differently comes back from the helper annotation.
func TestSidecarSetConvertsAsOpenKruise(t *testing.T) {
	for _, tc := range []struct {
		name          string
		edit          func(*SidecarSet)
		nsSelector    *metav1.LabelSelector
		customVersion string
		labels        map[string]string
		helper        bool
	}{
		{name: "field for field", labels: map[string]string{"team": "infra"}},
		{
			name: "namespace", edit: func(s *SidecarSet) { s.Spec.Namespace = "team-a" },
			nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: "team-a"}},
			labels:     map[string]string{"team": "infra"}, helper: true,
		},
		{
			name: "namespaceSelector",
			edit: func(s *SidecarSet) {
				s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
			},
			nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			labels:     map[string]string{"team": "infra"},
		},
		{
			name: "custom version label", edit: func(s *SidecarSet) { s.Labels[SidecarSetCustomVersionLabel] = "v2" },
			customVersion: "v2", labels: map[string]string{"team": "infra"},
		},
		{
			name: "empty custom version label", edit: func(s *SidecarSet) { s.Labels[SidecarSetCustomVersionLabel] = "" },
			labels: map[string]string{"team": "infra"}, helper: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alpha := logAgent()
			if tc.edit != nil {
				tc.edit(alpha)
			}
			beta := SidecarSetToV1beta1(alpha)
			assert.Equal(t, tc.nsSelector, beta.Spec.NamespaceSelector)
			assert.Equal(t, tc.customVersion, beta.Spec.CustomVersion)
			assert.Equal(t, tc.labels, beta.Labels, "the custom version label is the field in v1beta1")
			assert.Equal(t, tc.helper, beta.Annotations[SidecarSetV1alpha1FieldsAnnotation] != "", "helper annotation: %v", beta.Annotations)
			assert.Equal(t, "agent:1", beta.Spec.Containers[0].Image)
			assert.Equal(t, v1beta1.SidecarContainerColdUpgrade, beta.Spec.Containers[0].UpgradeStrategy.UpgradeType)
			assert.Equal(t, "TZ", beta.Spec.Containers[0].TransferEnv[0].EnvName)
			assert.Equal(t, int32(2), beta.Status.UpdatedReadyPods)

			back := SidecarSetFromV1beta1(beta)
			assert.Nil(t, back.Annotations)
			assert.Equal(t, alpha.Labels, back.Labels)
			assert.Equal(t, alpha.Spec, back.Spec)
		})
	}
}

func TestSidecarSetFromV1beta1(t *testing.T) {
	beta := SidecarSetToV1beta1(logAgent())
	beta.Spec.CustomVersion = "v3"
	beta.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: "team-b"}}
	alpha := SidecarSetFromV1beta1(beta)
	assert.Equal(t, "v3", alpha.Labels[SidecarSetCustomVersionLabel])
	assert.Empty(t, alpha.Spec.Namespace, "OpenKruise keeps a v1beta1 namespaceSelector as it is")
	assert.Equal(t, beta.Spec.NamespaceSelector, alpha.Spec.NamespaceSelector)
	assert.NotContains(t, alpha.Annotations, SidecarSetV1beta1FieldsAnnotation)

	// A v1beta1 label beside the field: v1alpha1 has only the label, so the
	// v1beta1 fields travel in the helper annotation and come back.
	beta.Labels = map[string]string{SidecarSetCustomVersionLabel: "stale"}
	alpha = SidecarSetFromV1beta1(beta)
	assert.Equal(t, "v3", alpha.Labels[SidecarSetCustomVersionLabel])
	require.Contains(t, alpha.Annotations, SidecarSetV1beta1FieldsAnnotation)
	assert.Equal(t, beta, SidecarSetToV1beta1(alpha))
}

// Kept fields are dropped once the object no longer says what they say.
func TestSidecarSetKeptFieldsYieldToEdits(t *testing.T) {
	alpha := logAgent()
	alpha.Spec.Namespace = "team-a"
	beta := SidecarSetToV1beta1(alpha)
	require.Contains(t, beta.Annotations, SidecarSetV1alpha1FieldsAnnotation)

	// Edited as v1beta1: the selector now names another namespace.
	beta.Spec.NamespaceSelector.MatchLabels[NamespaceNameLabel] = "team-b"
	edited := SidecarSetFromV1beta1(beta)
	assert.Empty(t, edited.Spec.Namespace)
	assert.Equal(t, map[string]string{NamespaceNameLabel: "team-b"}, edited.Spec.NamespaceSelector.MatchLabels)
	assert.Nil(t, edited.Annotations)
}
