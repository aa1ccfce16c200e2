package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/uddefaults"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const udNS = "ud"

func udPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
}

// udOfCloneSets is a UnitedDeployment of CloneSets over zones a, b and c.
func udOfCloneSets(name string, replicas int32) *appsv1alpha1.UnitedDeployment {
	sel := map[string]string{"app": "web"}
	var subsets []appsv1alpha1.Subset
	for _, z := range []string{"a", "b", "c"} {
		subsets = append(subsets, appsv1alpha1.Subset{Name: z, NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}})
	}
	return &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: udNS},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: appsv1alpha1.CloneSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: udPodTemplate()}}},
			Topology: appsv1alpha1.Topology{Subsets: subsets},
		},
	}
}

// TestUnitedDeploymentWebhooksInAnAPIServer runs muniteddeployment.kb.io and
// vuniteddeployment.kb.io, as deploy/base configures them, in a real API server: a good
// UnitedDeployment is admitted with OpenKruise's defaults; one of each class of mistakes is
// refused naming the field; a template that would not decode is refused, never stored; what
// OpenKruise admits (an Advanced StatefulSet template, which this CRD's schema defaults) is
// admitted; an update of a subset's node selector term is refused, one of the selector admitted;
// and the scale subresource reads and writes spec.replicas and exposes status.labelSelector.
func TestUnitedDeploymentWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: udNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, sctx := ktesting.NewTestContext(t)
	addr, ca := serveWebhooks(t, sctx, uddefaults.Webhook(), validate.UnitedDeploymentWebhook())
	installWebhookPair(t, kube, addr, ca, "muniteddeployment.kb.io", "vuniteddeployment.kb.io", "ud")
	uds := c.kruise.AppsV1alpha1().UnitedDeployments(udNS)
	waitFor(t, "the webhooks to refuse a UnitedDeployment without a template", func(ctx context.Context) (bool, error) {
		bad := udOfCloneSets("probe", 3)
		bad.Spec.Template = appsv1alpha1.SubsetTemplate{}
		_, err := uds.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "vuniteddeployment.kb.io"), nil
	})

	t.Run("admitted and defaulted", func(t *testing.T) {
		ud := udOfCloneSets("web", 6)
		two := intstr.FromInt32(2)
		ud.Spec.Topology.Subsets[0].MaxReplicas = &two
		got, err := uds.Create(ctx(t), ud, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, ptr.To[int32](10), got.Spec.RevisionHistoryLimit)
		assert.Equal(t, appsv1alpha1.UnitedDeploymentUpdateStrategy{Type: appsv1alpha1.ManualUpdateStrategyType, ManualUpdate: &appsv1alpha1.ManualUpdate{}},
			got.Spec.UpdateStrategy)
		for _, s := range got.Spec.Topology.Subsets {
			assert.Equal(t, ptr.To(intstr.FromInt32(0)), s.MinReplicas, "subset %s: minReplicas 0 under min/max", s.Name)
		}
		assert.Empty(t, got.Spec.Topology.ScheduleStrategy.Type, "not defaulted, as in OpenKruise: empty means Fixed")
	})

	t.Run("what OpenKruise admits", func(t *testing.T) {
		sel := map[string]string{"app": "web"}
		ud := udOfCloneSets("asts", 3)
		ud.Spec.Template = appsv1alpha1.SubsetTemplate{AdvancedStatefulSetTemplate: &appsv1alpha1.AdvancedStatefulSetTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: sel},
			Spec: appsv1beta1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: udPodTemplate(),
				UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{}}}}}
		_, err := uds.Create(ctx(t), ud, metav1.CreateOptions{})
		require.NoError(t, err, "the schema's defaults (replicas 1, partition 0) are not the user's")

		ud = udOfCloneSets("sts", 3)
		ud.Spec.Template = appsv1alpha1.SubsetTemplate{StatefulSetTemplate: &appsv1alpha1.StatefulSetTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: appsv1.StatefulSetSpec{Template: udPodTemplate()}}}
		ud.Spec.Topology.Subsets[1].Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"zone":"b"}}}`)}
		ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"b": 1}}
		_, err = uds.Create(ctx(t), ud, metav1.CreateOptions{})
		require.NoError(t, err)
	})

	refused := func(t *testing.T, err error, wants ...string) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `admission webhook "vuniteddeployment.kb.io" denied the request`)
		for _, w := range wants {
			assert.Contains(t, err.Error(), w)
		}
	}
	for name, tc := range map[string]struct {
		mutate func(*appsv1alpha1.UnitedDeployment)
		want   []string
	}{
		"two templates": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{Spec: appsv1.DeploymentSpec{Template: udPodTemplate()}}
		}, []string{"spec.template", "only one of"}},
		"pod labels not matching": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.CloneSetTemplate.Spec.Template.Labels = map[string]string{"app": "api"}
		}, []string{"spec.template.cloneSetTemplate.spec.template.metadata.labels"}},
		"subset replicas above spec.replicas": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].Replicas = ptr.To(intstr.FromInt32(9))
		}, []string{"spec.topology.subsets", "more than spec.replicas (6)"}},
		"duplicate subset": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[2].Name = "a"
		}, []string{`spec.topology.subsets[2].name: Duplicate value: "a"`}},
		"partition of no subset": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"z": 1}}
		}, []string{"spec.updateStrategy.manualUpdate.partitions[z]"}},
		"patch that does not merge": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"main"}}`)}
		}, []string{"spec.topology.subsets[0].patch"}},
		"Adaptive with subset replicas": {func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.ScheduleStrategy.Type = appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
			ud.Spec.Topology.Subsets[0].Replicas = ptr.To(intstr.FromInt32(1))
		}, []string{"spec.topology.subsets[0].replicas: Forbidden"}},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			ud := udOfCloneSets("bad", 6)
			tc.mutate(ud)
			_, err := uds.Create(ctx(t), ud, metav1.CreateOptions{})
			refused(t, err, tc.want...)
		})
	}

	t.Run("refused: a template that does not decode is never stored", func(t *testing.T) {
		ud := udOfCloneSets("undecodable", 3)
		ud.Spec.Template = appsv1alpha1.SubsetTemplate{DeploymentTemplate: &appsv1alpha1.DeploymentTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: appsv1.DeploymentSpec{Template: udPodTemplate()}}}
		ud.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "UnitedDeployment"}
		raw, err := json.Marshal(ud)
		require.NoError(t, err)
		// The Deployment's spec is schemaless: the API server would store a port out of int32.
		bad := strings.Replace(string(raw), `"image":"nginx"`, `"image":"nginx","ports":[{"containerPort":3000000000}]`, 1)
		require.NotEqual(t, string(raw), bad)
		err = c.kruise.AppsV1alpha1().RESTClient().Post().Namespace(udNS).Resource("uniteddeployments").
			Body([]byte(bad)).SetHeader("Content-Type", "application/json").Do(ctx(t)).Error()
		refused(t, err, "does not read as a UnitedDeployment", "containerPort")
		list, err := uds.List(ctx(t), metav1.ListOptions{})
		require.NoError(t, err, "every stored UnitedDeployment decodes")
		for _, u := range list.Items {
			assert.NotEqual(t, "undecodable", u.Name)
		}
	})

	t.Run("updates", func(t *testing.T) {
		got, err := uds.Get(ctx(t), "web", metav1.GetOptions{})
		require.NoError(t, err)
		changed := got.DeepCopy()
		changed.Spec.Topology.Subsets[1].NodeSelectorTerm.MatchExpressions[0].Values = []string{"x"}
		_, err = uds.Update(ctx(t), changed, metav1.UpdateOptions{})
		refused(t, err, "spec.topology.subsets[1].nodeSelectorTerm: Forbidden")
		changed = got.DeepCopy()
		changed.Spec.Selector.MatchLabels["tier"] = "x"
		changed.Spec.Template.CloneSetTemplate.Spec.Template.Labels["tier"] = "x"
		_, err = uds.Update(ctx(t), changed, metav1.UpdateOptions{})
		require.NoError(t, err, "the selector may change, as in OpenKruise (the subset workloads are recreated)")
		got, err = uds.Get(ctx(t), "web", metav1.GetOptions{})
		require.NoError(t, err)
		changed = got.DeepCopy()
		changed.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		_, err = uds.Update(ctx(t), changed, metav1.UpdateOptions{})
		require.NoError(t, err, "a new template is an update")
	})

	t.Run("scale subresource", func(t *testing.T) {
		scale, err := uds.GetScale(ctx(t), "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.EqualValues(t, 6, scale.Spec.Replicas)
		scale.Spec.Replicas = 9
		_, err = uds.UpdateScale(ctx(t), "web", scale, metav1.UpdateOptions{})
		require.NoError(t, err)
		got, err := uds.Get(ctx(t), "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, ptr.To[int32](9), got.Spec.Replicas)

		got.Status.Replicas, got.Status.LabelSelector = 4, "app=web"
		_, err = uds.UpdateStatus(ctx(t), got, metav1.UpdateOptions{})
		require.NoError(t, err)
		scale, err = uds.GetScale(ctx(t), "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, autoscalingv1.ScaleStatus{Replicas: 4, Selector: "app=web"}, scale.Status)
	})
}
