package validate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

var udLabels = map[string]string{"app": "web"}

func udPod() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: udLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
}

// udOf is a valid UnitedDeployment of StatefulSets over zones a, b and c, 6 replicas.
func udOf(mutate ...func(*appsv1alpha1.UnitedDeployment)) *appsv1alpha1.UnitedDeployment {
	ud := &appsv1alpha1.UnitedDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "UnitedDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](6),
			Selector: &metav1.LabelSelector{MatchLabels: udLabels},
			Template: appsv1alpha1.SubsetTemplate{StatefulSetTemplate: &appsv1alpha1.StatefulSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: udLabels}, Spec: appsv1.StatefulSetSpec{Template: udPod()}}},
			Topology: appsv1alpha1.Topology{Subsets: []appsv1alpha1.Subset{
				{Name: "a", NodeSelectorTerm: udZone("a")}, {Name: "b", NodeSelectorTerm: udZone("b")}, {Name: "c", NodeSelectorTerm: udZone("c")}}},
		},
	}
	for _, m := range mutate {
		m(ud)
	}
	return ud
}

func udZone(zone string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
}

func is(v intstr.IntOrString) *intstr.IntOrString { return &v }

func replicas(rs ...*intstr.IntOrString) func(*appsv1alpha1.UnitedDeployment) {
	return func(ud *appsv1alpha1.UnitedDeployment) {
		for i, r := range rs {
			ud.Spec.Topology.Subsets[i].Replicas = r
		}
	}
}

func minMax(pairs ...[2]*intstr.IntOrString) func(*appsv1alpha1.UnitedDeployment) {
	return func(ud *appsv1alpha1.UnitedDeployment) {
		for i, p := range pairs {
			ud.Spec.Topology.Subsets[i].MinReplicas, ud.Spec.Topology.Subsets[i].MaxReplicas = p[0], p[1]
		}
	}
}

func cloneSetTemplate(ud *appsv1alpha1.UnitedDeployment) {
	ud.Spec.Template = appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: udLabels}, Spec: appsv1alpha1.CloneSetSpec{Template: udPod()}}}
}

// twoSubsetsOf10 keeps subsets a and b and sets spec.replicas to 10.
func twoSubsetsOf10(ud *appsv1alpha1.UnitedDeployment) {
	ud.Spec.Replicas = ptr.To[int32](10)
	ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:2]
}

func udRequest(t *testing.T, ud *appsv1alpha1.UnitedDeployment) *admissionv1.AdmissionRequest {
	return request(t, "uniteddeployments", "UnitedDeployment", ud, "v1alpha1")
}

func TestUnitedDeploymentCreate(t *testing.T) {
	one, two, three, six := is(intstr.FromInt32(1)), is(intstr.FromInt32(2)), is(intstr.FromInt32(3)), is(intstr.FromInt32(6))
	half := is(intstr.FromString("50%"))
	for _, tc := range []struct {
		name    string
		ud      *appsv1alpha1.UnitedDeployment
		reason  string
		message []string
	}{
		// What OpenKruise admits, kruise admits.
		{name: "subsets share evenly", ud: udOf()},
		{name: "some subsets set replicas, the rest share", ud: udOf(replicas(two, half))},
		{name: "every subset sets replicas adding up", ud: udOf(replicas(two, two, two))},
		{name: "no spec.replicas, every subset sets a count", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = nil }, replicas(one, two, three))},
		{name: "min/max with an unlimited subset", ud: udOf(minMax([2]*intstr.IntOrString{one, two}, [2]*intstr.IntOrString{nil, half}))},
		{name: "Adaptive with min/max", ud: udOf(minMax([2]*intstr.IntOrString{nil, two}), func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.ScheduleStrategy.Type = appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
		})},
		{name: "reserve with CloneSets", ud: udOf(cloneSetTemplate, func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{Type: appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
				Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{ReserveUnschedulablePods: true}}
		})},
		{name: "CloneSet template with replicas (OpenKruise: no rule)", ud: udOf(cloneSetTemplate, func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.CloneSetTemplate.Spec.Replicas = ptr.To[int32](3)
		})},
		{name: "Deployment template", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template = appsv1alpha1.SubsetTemplate{DeploymentTemplate: &appsv1alpha1.DeploymentTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: udLabels}, Spec: appsv1.DeploymentSpec{Template: udPod()}}}
		})},
		{name: "Advanced StatefulSet template with the schema's defaults (replicas 1, partition 0)", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template = appsv1alpha1.SubsetTemplate{AdvancedStatefulSetTemplate: &appsv1alpha1.AdvancedStatefulSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: udLabels}, Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](1), Template: udPod(),
					UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
						RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}}}}
		})},
		{name: "StatefulSet OnDelete with a partition (ignored)", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}}
		})},
		{name: "tolerations, a patch and partitions", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
			ud.Spec.Topology.Subsets[1].Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"zone":"b"}},"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"2"}}}]}}`)}
			ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1, "c": 2}}
		})},
		{name: "no subsets", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Topology.Subsets = nil })},
		{name: "percentages rounded half up add up (71% + 29% of 10)", ud: udOf(twoSubsetsOf10, replicas(is(intstr.FromString("71%")), is(intstr.FromString("29%"))))},
		{name: "a count and a percentage add up (1 + 90% of 10)", ud: udOf(twoSubsetsOf10, replicas(one, is(intstr.FromString("90%"))))},

		// What OpenKruise refuses.
		{name: "negative replicas", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = ptr.To[int32](-1) }),
			reason: ReasonInvalidTopology, message: []string{"spec.replicas: Invalid value: -1"}},
		{name: "no selector", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Selector = nil }),
			reason: ReasonInvalidSelector, message: []string{"spec.selector: Required value"}},
		{name: "empty selector", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Selector = &metav1.LabelSelector{} }),
			reason: ReasonInvalidSelector, message: []string{"spec.selector", "every pod of the namespace"}},
		{name: "malformed selector", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}
		}), reason: ReasonInvalidSelector, message: []string{"spec.selector.matchExpressions[0].operator"}},
		{name: "no template", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Template = appsv1alpha1.SubsetTemplate{} }),
			reason: ReasonInvalidTemplate, message: []string{"spec.template: Required value"}},
		{name: "two templates", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			sts := ud.Spec.Template.StatefulSetTemplate
			cloneSetTemplate(ud)
			ud.Spec.Template.StatefulSetTemplate = sts
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template", "only one of"}},
		{name: "workload labels do not match", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Labels = map[string]string{"app": "api"}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.statefulSetTemplate.metadata.labels", "app=api"}},
		{name: "pod labels do not match", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Spec.Template.Labels = map[string]string{"app": "api"}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.statefulSetTemplate.spec.template.metadata.labels"}},
		{name: "CloneSet pod labels do not match", ud: udOf(cloneSetTemplate, func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.CloneSetTemplate.Spec.Template.Labels = nil
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.cloneSetTemplate.spec.template.metadata.labels"}},
		{name: "StatefulSet template replicas", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Spec.Replicas = ptr.To[int32](3)
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.statefulSetTemplate.spec.replicas: Invalid value: 3"}},
		{name: "StatefulSet template partition", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.statefulSetTemplate.spec.updateStrategy.rollingUpdate.partition"}},
		{name: "Advanced StatefulSet template replicas and partition", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template = appsv1alpha1.SubsetTemplate{AdvancedStatefulSetTemplate: &appsv1alpha1.AdvancedStatefulSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: udLabels}, Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: udPod(),
					UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
						RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}}}}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.advancedStatefulSetTemplate.spec.replicas: Invalid value: 3",
			"spec.template.advancedStatefulSetTemplate.spec.updateStrategy.rollingUpdate.partition: Invalid value: 2"}},
		{name: "Deployment template replicas", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template = appsv1alpha1.SubsetTemplate{DeploymentTemplate: &appsv1alpha1.DeploymentTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: udLabels}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: udPod()}}}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.deploymentTemplate.spec.replicas"}},
		{name: "pod template: restartPolicy, no container", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Spec.Template.Spec = corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.template.statefulSetTemplate.spec.template.spec.restartPolicy",
			"spec.template.statefulSetTemplate.spec.template.spec.containers: Required value"}},
		{name: "reserve with StatefulSets", ud: udOf(minMax([2]*intstr.IntOrString{nil, two}), func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{Type: appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
				Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{ReserveUnschedulablePods: true}}
		}), reason: ReasonInvalidTemplate, message: []string{"spec.topology.scheduleStrategy.adaptive.reserveUnschedulablePods", "stateless"}},
		{name: "subset without a name, duplicated, not a DNS label", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].Name, ud.Spec.Topology.Subsets[1].Name, ud.Spec.Topology.Subsets[2].Name = "", "Zone_B", "Zone_B"
		}), reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[0].name: Required value",
			"spec.topology.subsets[1].name: Invalid value: \"Zone_B\"", "spec.topology.subsets[2].name: Duplicate value: \"Zone_B\""}},
		{name: "malformed nodeSelectorTerm", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].NodeSelectorTerm.MatchExpressions[0].Operator = corev1.NodeSelectorOpExists
		}), reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[0].nodeSelectorTerm"}},
		{name: "malformed toleration", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[1].Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}
		}), reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[1].tolerations[0].operator"}},
		{name: "Adaptive with subset replicas", ud: udOf(replicas(two), func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.ScheduleStrategy.Type = appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
		}), reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[0].replicas: Forbidden"}},
		{name: "replicas with min/max", ud: udOf(replicas(two), minMax([2]*intstr.IntOrString{nil, nil}, [2]*intstr.IntOrString{one, nil})),
			reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets", "not both"}},
		{name: "min/max without spec.replicas", ud: udOf(minMax([2]*intstr.IntOrString{one, two}), func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = nil }),
			reason: ReasonInvalidTopology, message: []string{"spec.replicas: Required value"}},
		{name: "every subset with maxReplicas", ud: udOf(minMax([2]*intstr.IntOrString{nil, two}, [2]*intstr.IntOrString{nil, two}, [2]*intstr.IntOrString{nil, two})),
			reason: ReasonInvalidTopology, message: []string{"at least one subset must leave maxReplicas unset"}},
		{name: "minReplicas above maxReplicas", ud: udOf(minMax([2]*intstr.IntOrString{three, two})),
			reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[0].minReplicas: Invalid value: \"3\": is more than maxReplicas (2)"}},
		{name: "Σ minReplicas above Σ maxReplicas", ud: udOf(minMax([2]*intstr.IntOrString{is(intstr.FromInt32(1500000)), nil},
			[2]*intstr.IntOrString{nil, one}, [2]*intstr.IntOrString{nil, one})),
			reason: ReasonInvalidTopology, message: []string{"minReplicas add up to more than their maxReplicas"}},
		{name: "Σ replicas above spec.replicas", ud: udOf(replicas(six, one)),
			reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets: Invalid value: 7", "more than spec.replicas (6)"}},
		{name: "every subset sets replicas not adding up", ud: udOf(replicas(one, one, one)),
			reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets: Invalid value: 3", "must add up to spec.replicas (6)"}},
		{name: "no spec.replicas and a subset without replicas", ud: udOf(replicas(one), func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = nil }),
			reason: ReasonInvalidTopology, message: []string{"spec.replicas: Required value"}},
		{name: "a percentage without spec.replicas", ud: udOf(replicas(half, one, one), func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = nil }),
			reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[0].replicas", "needs spec.replicas"}},
		{name: "a bad percentage and a negative count", ud: udOf(replicas(is(intstr.FromString("150%")), is(intstr.FromInt32(-1)), is(intstr.FromString("two")))),
			reason: ReasonInvalidTopology, message: []string{"spec.topology.subsets[0].replicas", "0% to 100%", "spec.topology.subsets[1].replicas", "spec.topology.subsets[2].replicas"}},
		{name: "partition of an unknown subset", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1, "z": 1}}
		}), reason: ReasonInvalidUpdateStrategy, message: []string{"spec.updateStrategy.manualUpdate.partitions[z]: Not found"}},

		// kruise's own: a patch that could never make a subset.
		{name: "patch not an object", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].Patch = runtime.RawExtension{Raw: []byte(`["x"]`)}
		}), reason: ReasonInvalidSubsetPatch, message: []string{"spec.topology.subsets[0].patch", "JSON object"}},
		{name: "patch of the wrong type", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[2].Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"main"}}`)}
		}), reason: ReasonInvalidSubsetPatch, message: []string{"spec.topology.subsets[2].patch"}},
		{name: "patch leaving a container without image", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[1].Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"side"}]}}`)}
		}), reason: ReasonInvalidSubsetPatch, message: []string{"spec.topology.subsets[1].patch(merged).spec.containers[0].image: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serve(t, UnitedDeploymentWebhook()).judged(t, udRequest(t, tc.ud), tc.reason, tc.message...)
		})
	}
}

// TestUnitedDeploymentUndecodable: a schemaless template with an out-of-range 32-bit number or a
// value of the wrong type is refused, naming the field: stored, it would break every client.
func TestUnitedDeploymentUndecodable(t *testing.T) {
	for name, tc := range map[string]struct{ path, value, want string }{
		"a valid value (control)":      {`"statefulSetTemplate","spec","template","spec","terminationGracePeriodSeconds"`, `1`, ""},
		"minReadySeconds out of int32": {`"statefulSetTemplate","spec","minReadySeconds"`, `3000000000`, "minReadySeconds"},
		"replicas a string":            {`"statefulSetTemplate","spec","replicas"`, `"3"`, "replicas"},
		"port out of int32":            {`"statefulSetTemplate","spec","template","spec","containers",0,"ports"`, `[{"containerPort":3000000000}]`, "containerPort"},
		"label not a string":           {`"statefulSetTemplate","metadata","labels"`, `{"app":1}`, "labels"},
		"minReadySeconds float":        {`"statefulSetTemplate","spec","minReadySeconds"`, `1.5`, "minReadySeconds"},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(udOf())
			require.NoError(t, err)
			var obj map[string]any
			require.NoError(t, json.Unmarshal(raw, &obj))
			var path []any
			require.NoError(t, json.Unmarshal([]byte("["+tc.path+"]"), &path))
			var value any
			require.NoError(t, json.Unmarshal([]byte(tc.value), &value))
			cur := obj["spec"].(map[string]any)["template"]
			for i, p := range path {
				last := i == len(path)-1
				switch k := p.(type) {
				case string:
					if last {
						cur.(map[string]any)[k] = value
					} else {
						cur = cur.(map[string]any)[k]
					}
				case float64:
					cur = cur.([]any)[int(k)]
				}
			}
			req := udRequest(t, udOf())
			req.Object.Raw, err = json.Marshal(obj)
			require.NoError(t, err)
			if tc.want == "" {
				serve(t, UnitedDeploymentWebhook()).judged(t, req, "")
				return
			}
			serve(t, UnitedDeploymentWebhook()).judged(t, req, ReasonUndecodable, "does not read as a UnitedDeployment", tc.want)
		})
	}
}

func TestUnitedDeploymentUpdate(t *testing.T) {
	update := func(t *testing.T, old, ud *appsv1alpha1.UnitedDeployment) *admissionv1.AdmissionRequest {
		req := udRequest(t, ud)
		req.Operation = admissionv1.Update
		raw, err := json.Marshal(old)
		require.NoError(t, err)
		req.OldObject = runtime.RawExtension{Raw: raw}
		return req
	}
	for _, tc := range []struct {
		name    string
		ud      *appsv1alpha1.UnitedDeployment
		reason  string
		message []string
	}{
		{name: "replicas, template, partitions, a new subset, a subset gone", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Replicas = ptr.To[int32](9)
			ud.Spec.Template.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
			ud.Spec.Template.StatefulSetTemplate.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets[1:], appsv1alpha1.Subset{Name: "d", NodeSelectorTerm: udZone("d")})
			ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"d": 1}}
		})},
		{name: "template kind changed", ud: udOf(cloneSetTemplate)},
		{name: "selector", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Selector.MatchLabels = map[string]string{"app": "web", "tier": "x"}
			ud.Spec.Template.StatefulSetTemplate.Labels = ud.Spec.Selector.MatchLabels
			ud.Spec.Template.StatefulSetTemplate.Spec.Template.Labels = ud.Spec.Selector.MatchLabels
		})},
		{name: "a subset's nodeSelectorTerm and tolerations", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[1].NodeSelectorTerm = udZone("x")
			ud.Spec.Topology.Subsets[2].Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}), reason: ReasonForbiddenUpdate, message: []string{"spec.topology.subsets[1].nodeSelectorTerm: Forbidden", "spec.topology.subsets[2].tolerations: Forbidden"}},
		{name: "a StatefulSet template's serviceName", ud: udOf(func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Template.StatefulSetTemplate.Spec.ServiceName = "other"
		}), reason: ReasonForbiddenUpdate, message: []string{"spec.template.statefulSetTemplate.spec.serviceName: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serve(t, UnitedDeploymentWebhook()).judged(t, update(t, udOf(), tc.ud), tc.reason, tc.message...)
		})
	}

	t.Run("a problem the stored object had does not block an update", func(t *testing.T) {
		old := udOf(replicas(is(intstr.FromInt32(1))), func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.Topology.Subsets[0].Replicas = is(intstr.FromInt32(9))
		})
		ud := old.DeepCopy()
		ud.Spec.Template.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		serve(t, UnitedDeploymentWebhook()).judged(t, update(t, old, ud), "")
	})
}

func TestUnitedDeploymentOtherRequests(t *testing.T) {
	s := serve(t, UnitedDeploymentWebhook())
	bad := udOf(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Selector = nil })
	for name, mod := range map[string]func(*admissionv1.AdmissionRequest){
		"delete":      func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Delete },
		"scale":       func(r *admissionv1.AdmissionRequest) { r.SubResource = "scale" },
		"other kind":  func(r *admissionv1.AdmissionRequest) { r.Resource.Resource = "clonesets" },
		"other group": func(r *admissionv1.AdmissionRequest) { r.Resource.Group = "apps" },
	} {
		t.Run(name, func(t *testing.T) {
			req := udRequest(t, bad)
			mod(req)
			resp := s.send(t, req)
			require.True(t, resp.Allowed, strings.TrimSpace(name))
		})
	}
}
