package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// TestSidecarSetAPI: a SidecarSet written as v1alpha1 reads as v1beta1
// through kruise's /convert, the schema fills in OpenKruise's defaults, and
// each CEL rule refuses an object that breaks it, saying why.
func TestSidecarSetAPI(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	serveSidecarSetConversion(t, c)

	t.Run("Conversion", func(t *testing.T) { testSidecarSetConversion(t, c) })
	t.Run("Validation", func(t *testing.T) { testSidecarSetValidation(t, c) })
}

// serveSidecarSetConversion points the sidecarsets CRD's conversion at
// kruise's /convert, and waits until the API server uses it: a v1alpha1
// namespace reads back as a v1beta1 namespaceSelector.
func serveSidecarSetConversion(t *testing.T, c *cluster) {
	convertThroughWebhook(t, c, "sidecarsets.apps.kruise.io")
	tries := 0
	waitFor(t, "SidecarSet conversion through the webhook", func(ctx context.Context) (bool, error) {
		tries++
		probe := sidecarSet(fmt.Sprintf("probe-%d", tries))
		probe.Spec.Namespace = "probe"
		if _, err := c.kruise.AppsV1alpha1().SidecarSets().Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		defer func() { _ = c.kruise.AppsV1beta1().SidecarSets().Delete(ctx, probe.Name, metav1.DeleteOptions{}) }()
		got, err := c.kruise.AppsV1beta1().SidecarSets().Get(ctx, probe.Name, metav1.GetOptions{})
		return err == nil && got.Spec.NamespaceSelector != nil, nil
	})
}

func sidecarSet(name string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "agent:1"}}},
		},
	}
}

func testSidecarSetConversion(t *testing.T, c *cluster) {
	cx := ctx(t)
	ss := sidecarSet("convert")
	ss.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "v1"}
	ss.Spec.Namespace = "team-a"
	ss.Spec.InitContainers = []v1alpha1.SidecarContainer{{
		Container: corev1.Container{Name: "proxy", Image: "proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
	}}
	ss.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a": "b"}}}
	ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v0")}
	created, err := c.kruise.AppsV1alpha1().SidecarSets().Create(cx, ss, metav1.CreateOptions{})
	require.NoError(t, err)
	// The defaults OpenKruise's mutating webhook writes, but podInjectPolicy,
	// whose default depends on the list.
	assert.Equal(t, ptr.To[int32](10), created.Spec.RevisionHistoryLimit)
	assert.Equal(t, v1alpha1.RollingUpdateSidecarSetStrategyType, created.Spec.UpdateStrategy.Type)
	assert.Equal(t, ptr.To(intstr.FromInt32(1)), created.Spec.UpdateStrategy.MaxUnavailable)
	assert.Equal(t, ptr.To(intstr.FromInt32(0)), created.Spec.UpdateStrategy.Partition)
	assert.Equal(t, v1alpha1.SidecarContainerColdUpgrade, created.Spec.Containers[0].UpgradeStrategy.UpgradeType)
	assert.Equal(t, v1alpha1.ShareVolumePolicyDisabled, created.Spec.Containers[0].ShareVolumePolicy.Type)
	assert.Empty(t, created.Spec.Containers[0].PodInjectPolicy)
	assert.Equal(t, v1alpha1.SidecarSetRetainPatchPolicy, created.Spec.PatchPodMetadata[0].PatchPolicy)
	assert.Equal(t, v1alpha1.AlwaysSidecarSetInjectRevisionPolicy, created.Spec.InjectionStrategy.Revision.Policy)
	assert.Equal(t, "proxy:1", created.Spec.InitContainers[0].Image, "the container is kept as written")

	beta, err := c.kruise.AppsV1beta1().SidecarSets().Get(cx, "convert", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.NamespaceNameLabel: "team-a"}}, beta.Spec.NamespaceSelector)
	assert.Equal(t, "v1", beta.Spec.CustomVersion)
	assert.NotContains(t, beta.Labels, v1beta1.SidecarSetCustomVersionLabel, "the field replaces the label")
	assert.Equal(t, ptr.To(corev1.ContainerRestartPolicyAlways), beta.Spec.InitContainers[0].RestartPolicy)

	// Written back as v1beta1, it reads as v1alpha1 as it was written.
	beta.Spec.UpdateStrategy.Paused = true
	_, err = c.kruise.AppsV1beta1().SidecarSets().Update(cx, beta, metav1.UpdateOptions{})
	require.NoError(t, err)
	alpha, err := c.kruise.AppsV1alpha1().SidecarSets().Get(cx, "convert", metav1.GetOptions{})
	require.NoError(t, err)
	created.Spec.UpdateStrategy.Paused = true
	assert.Equal(t, created.Spec, alpha.Spec)
	assert.Equal(t, created.Labels, alpha.Labels)
	assert.Empty(t, alpha.Annotations)
}

func testSidecarSetValidation(t *testing.T, c *cluster) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.SidecarSet)
		want   string
	}{
		{"no selector", func(s *v1alpha1.SidecarSet) { s.Spec.Selector = nil }, "spec.selector must select something"},
		{"empty selector", func(s *v1alpha1.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector must select something"},
		{"empty namespaceSelector", func(s *v1alpha1.SidecarSet) { s.Spec.NamespaceSelector = &metav1.LabelSelector{} },
			"spec.namespaceSelector, when set, must select something"},
		{"namespace and namespaceSelector", func(s *v1alpha1.SidecarSet) {
			s.Spec.Namespace = "a"
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}, "spec.namespace and spec.namespaceSelector cannot be used together"},
		{"no containers", func(s *v1alpha1.SidecarSet) { s.Spec.Containers = nil }, "needs at least one of initContainers and containers"},
		{"partition and selector", func(s *v1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}, "partition and updateStrategy.selector cannot be used together"},
		{"number in quotes", func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("5")) },
			"a number in quotes is refused"},
		{"revision naming nothing", func(s *v1alpha1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{Policy: v1alpha1.PartialSidecarSetInjectRevisionPolicy}
		}, "injectionStrategy.revision needs customVersion or revisionName"},
		{"unknown revision policy", func(s *v1alpha1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("r"), Policy: "Sometimes"}
		}, "Unsupported value"},
		{"patch without annotations", func(s *v1alpha1.SidecarSet) {
			s.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy}}
		}, "every patchPodMetadata entry needs annotations"},
		{"resourcesExpr computing nothing", func(s *v1alpha1.SidecarSet) {
			s.Spec.Containers[0].ResourcesPolicy = &v1alpha1.ResourcesPolicy{TargetContainersMode: v1alpha1.TargetContainersModeSum}
		}, "resourcesExpr needs limits or requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sidecarSet("bad")
			tc.mutate(s)
			_, err := c.kruise.AppsV1alpha1().SidecarSets().Create(ctx(t), s, metav1.CreateOptions{})
			requireInvalid(t, err, tc.want)
		})
	}

	t.Run("selector with partition 0 accepted", func(t *testing.T) {
		s := sidecarSet("canary")
		s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		_, err := c.kruise.AppsV1alpha1().SidecarSets().Create(ctx(t), s, metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("native sidecar with RollingUpdate accepted", func(t *testing.T) {
		// OpenKruise refuses it; kruise upgrades native sidecars in place.
		s := sidecarSet("native")
		s.Spec.InitContainers = []v1alpha1.SidecarContainer{{
			Container: corev1.Container{Name: "proxy", Image: "proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
		}}
		_, err := c.kruise.AppsV1beta1().SidecarSets().Create(ctx(t), v1alpha1.SidecarSetToV1beta1(s), metav1.CreateOptions{})
		require.NoError(t, err)
	})
}
