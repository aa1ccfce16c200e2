package spread

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func zoneTerm(zone string) *corev1.NodeSelectorTerm {
	return &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
}

func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "main", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}},
			Tolerations: []corev1.Toleration{{Key: "own", Operator: corev1.TolerationOpExists}},
		},
	}
}

func TestInject(t *testing.T) {
	ws := cloneSetWS()
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	pref := corev1.PreferredSchedulingTerm{Weight: 10, Preference: *zoneTerm("z1")}

	t.Run("tolerations and preferred terms appended, required term alone", func(t *testing.T) {
		pod := basePod()
		s := &appsv1alpha1.WorkloadSpreadSubset{Name: "a", RequiredNodeSelectorTerm: zoneTerm("z1"),
			PreferredNodeSelectorTerms: []corev1.PreferredSchedulingTerm{pref}, Tolerations: []corev1.Toleration{spot}}
		require.NoError(t, Inject(pod, ws, s, ""))
		assert.Equal(t, []corev1.Toleration{{Key: "own", Operator: corev1.TolerationOpExists}, spot}, pod.Spec.Tolerations)
		na := pod.Spec.Affinity.NodeAffinity
		assert.Equal(t, []corev1.PreferredSchedulingTerm{pref}, na.PreferredDuringSchedulingIgnoredDuringExecution)
		assert.Equal(t, []corev1.NodeSelectorTerm{*zoneTerm("z1")}, na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
		assert.Equal(t, `{"name":"ws","subset":"a"}`, pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation])
	})

	t.Run("required term ANDed into each existing term, preferred appended after the pod's", func(t *testing.T) {
		pod := basePod()
		gpu := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}}
		cpu := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}
		own := corev1.PreferredSchedulingTerm{Weight: 1, Preference: gpu}
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{gpu, cpu}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{own},
		}}
		s := &appsv1alpha1.WorkloadSpreadSubset{Name: "a", RequiredNodeSelectorTerm: zoneTerm("z1"), PreferredNodeSelectorTerms: []corev1.PreferredSchedulingTerm{pref}}
		require.NoError(t, Inject(pod, ws, s, "k1"))
		na := pod.Spec.Affinity.NodeAffinity
		z := zoneTerm("z1").MatchExpressions[0]
		assert.Equal(t, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{gpu.MatchExpressions[0], z}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{z}, MatchFields: cpu.MatchFields},
		}, na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
		assert.Equal(t, []corev1.PreferredSchedulingTerm{own, pref}, na.PreferredDuringSchedulingIgnoredDuringExecution)
		assert.Equal(t, `{"name":"ws","subset":"a","uid":"k1"}`, pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation])
	})

	t.Run("no affinity added by a subset without terms", func(t *testing.T) {
		pod := basePod()
		require.NoError(t, Inject(pod, ws, &appsv1alpha1.WorkloadSpreadSubset{Name: "a"}, ""))
		assert.Nil(t, pod.Spec.Affinity)
	})

	t.Run("patch: labels, annotations, resources, env", func(t *testing.T) {
		pod := basePod()
		s := &appsv1alpha1.WorkloadSpreadSubset{Name: "a", Patch: runtime.RawExtension{Raw: []byte(`{
			"metadata":{"labels":{"tier":"spot"},"annotations":{"note":"yes"}},
			"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"2"}},"env":[{"name":"B","value":"2"}]}]}}`)}}
		require.NoError(t, Inject(pod, ws, s, ""))
		assert.Equal(t, map[string]string{"app": "x", "tier": "spot"}, pod.Labels)
		assert.Equal(t, "yes", pod.Annotations["note"])
		assert.Contains(t, pod.Annotations, appsv1alpha1.MatchedWorkloadSpreadAnnotation)
		c := pod.Spec.Containers[0]
		assert.Equal(t, "img", c.Image)
		assert.Equal(t, resource.MustParse("2"), c.Resources.Limits[corev1.ResourceCPU])
		assert.ElementsMatch(t, []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}, c.Env)
	})

	t.Run("patch changing priorityClassName clears priority (#1607)", func(t *testing.T) {
		pod := basePod()
		pod.Spec.PriorityClassName, pod.Spec.Priority = "low", ptr.To[int32](10)
		s := &appsv1alpha1.WorkloadSpreadSubset{Name: "a", Patch: runtime.RawExtension{Raw: []byte(`{"spec":{"priorityClassName":"high"}}`)}}
		require.NoError(t, Inject(pod, ws, s, ""))
		assert.Equal(t, "high", pod.Spec.PriorityClassName)
		assert.Nil(t, pod.Spec.Priority)

		pod = basePod()
		pod.Spec.PriorityClassName, pod.Spec.Priority = "low", ptr.To[int32](10)
		s.Patch.Raw = []byte(`{"metadata":{"labels":{"a":"b"}}}`)
		require.NoError(t, Inject(pod, ws, s, ""))
		assert.Equal(t, ptr.To[int32](10), pod.Spec.Priority, "kept when the class is unchanged")
	})

	t.Run("bad patch is an error", func(t *testing.T) {
		s := &appsv1alpha1.WorkloadSpreadSubset{Name: "a", Patch: runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"x"}}`)}}
		require.Error(t, Inject(basePod(), ws, s, ""))
	})
}

func TestFits(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "z1"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectNoSchedule}}}}
	tol := []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		node   *corev1.Node
		subset appsv1alpha1.WorkloadSpreadSubset
		want   bool
	}{
		{name: "term and toleration from the subset", pod: basePod(), node: node, subset: appsv1alpha1.WorkloadSpreadSubset{RequiredNodeSelectorTerm: zoneTerm("z1"), Tolerations: tol}, want: true},
		{name: "other zone", pod: basePod(), node: node, subset: appsv1alpha1.WorkloadSpreadSubset{RequiredNodeSelectorTerm: zoneTerm("z2"), Tolerations: tol}},
		{name: "taint not tolerated", pod: basePod(), node: node, subset: appsv1alpha1.WorkloadSpreadSubset{RequiredNodeSelectorTerm: zoneTerm("z1")}},
		{name: "pod's own toleration counts", pod: func() *corev1.Pod { p := basePod(); p.Spec.Tolerations = tol; return p }(), node: node, subset: appsv1alpha1.WorkloadSpreadSubset{}, want: true},
		{name: "pod's own required term ANDed", pod: func() *corev1.Pod {
			p := basePod()
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{*zoneTerm("z9")}}}}
			return p
		}(), node: node, subset: appsv1alpha1.WorkloadSpreadSubset{RequiredNodeSelectorTerm: zoneTerm("z1"), Tolerations: tol}},
		{name: "no node, subset requires nothing", pod: basePod(), subset: appsv1alpha1.WorkloadSpreadSubset{}, want: true},
		{name: "no node, subset requires a zone", pod: basePod(), subset: appsv1alpha1.WorkloadSpreadSubset{RequiredNodeSelectorTerm: zoneTerm("z1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Fits(tc.pod, tc.node, &tc.subset))
		})
	}
}
