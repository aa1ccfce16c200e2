package daemonset

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect}
}

func taintedNode(name string, taints ...corev1.Taint) *corev1.Node {
	n := gen.Node(name, gen.AddNodeLabel("zone", "a"))
	n.Spec.Taints = taints
	return n
}

func TestNodeEligibility(t *testing.T) {
	affinity := func(op corev1.NodeSelectorOperator, values ...string) func(*corev1.PodTemplateSpec) {
		return func(tpl *corev1.PodTemplateSpec) {
			tpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: values}},
				}}},
			}}
		}
	}
	tolerate := func(key string, effect corev1.TaintEffect) func(*corev1.PodTemplateSpec) {
		return func(tpl *corev1.PodTemplateSpec) {
			tpl.Spec.Tolerations = append(tpl.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
		}
	}
	run, keep, none := Eligibility{true, true}, Eligibility{false, true}, Eligibility{}
	tests := []struct {
		name string
		node *corev1.Node
		tpl  []func(*corev1.PodTemplateSpec)
		want Eligibility
	}{
		{"plain node", taintedNode("n1"), nil, run},
		{"nodeSelector matches", taintedNode("n1"), []func(*corev1.PodTemplateSpec){func(t *corev1.PodTemplateSpec) { t.Spec.NodeSelector = map[string]string{"zone": "a"} }}, run},
		{"nodeSelector does not match", taintedNode("n1"), []func(*corev1.PodTemplateSpec){func(t *corev1.PodTemplateSpec) { t.Spec.NodeSelector = map[string]string{"zone": "b"} }}, none},
		{"required affinity matches", taintedNode("n1"), []func(*corev1.PodTemplateSpec){affinity(corev1.NodeSelectorOpIn, "a")}, run},
		{"required affinity does not match", taintedNode("n1"), []func(*corev1.PodTemplateSpec){affinity(corev1.NodeSelectorOpNotIn, "a")}, none},
		{"template nodeName is another node", taintedNode("n1"), []func(*corev1.PodTemplateSpec){func(t *corev1.PodTemplateSpec) { t.Spec.NodeName = "n2" }}, none},
		{"template nodeName is the node", taintedNode("n1"), []func(*corev1.PodTemplateSpec){func(t *corev1.PodTemplateSpec) { t.Spec.NodeName = "n1" }}, run},
		{"untolerated NoSchedule: keep running, no new pod", taintedNode("n1", taint("dedicated", corev1.TaintEffectNoSchedule)), nil, keep},
		{"untolerated NoExecute: neither", taintedNode("n1", taint("dedicated", corev1.TaintEffectNoExecute)), nil, none},
		{"PreferNoSchedule is ignored", taintedNode("n1", taint("dedicated", corev1.TaintEffectPreferNoSchedule)), nil, run},
		{"tolerated NoSchedule", taintedNode("n1", taint("dedicated", corev1.TaintEffectNoSchedule)), []func(*corev1.PodTemplateSpec){tolerate("dedicated", corev1.TaintEffectNoSchedule)}, run},
		{"tolerated NoExecute", taintedNode("n1", taint("dedicated", corev1.TaintEffectNoExecute)), []func(*corev1.PodTemplateSpec){tolerate("dedicated", corev1.TaintEffectNoExecute)}, run},
		{"not-ready NoExecute tolerated by default", taintedNode("n1", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), nil, run},
		{"unreachable NoExecute tolerated by default", taintedNode("n1", taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), nil, run},
		{"not-ready NoSchedule is not tolerated by default", taintedNode("n1", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)), nil, keep},
		{"disk pressure tolerated", taintedNode("n1", taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)), nil, run},
		{"memory pressure tolerated", taintedNode("n1", taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)), nil, run},
		{"pid pressure tolerated", taintedNode("n1", taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)), nil, run},
		{"unschedulable node (cordoned) tolerated", func() *corev1.Node {
			n := taintedNode("n1", taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule))
			n.Spec.Unschedulable = true
			return n
		}(), nil, run},
		{"network-unavailable keeps out pod-network pods", taintedNode("n1", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), nil, keep},
		{"network-unavailable tolerated by host-network pods", taintedNode("n1", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), []func(*corev1.PodTemplateSpec){func(t *corev1.PodTemplateSpec) { t.Spec.HostNetwork = true }}, run},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := gen.PodTemplate()
			for _, m := range tt.tpl {
				m(tpl)
			}
			before := tpl.DeepCopy()
			assert.Equal(t, tt.want, NodeEligibility(tt.node, tpl))
			assert.Equal(t, before, tpl, "the template is not changed")
		})
	}
}

func TestAddDaemonTolerations(t *testing.T) {
	tol := func(key string, effect corev1.TaintEffect, seconds ...int64) corev1.Toleration {
		out := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		if len(seconds) > 0 {
			out.TolerationSeconds = &seconds[0]
		}
		return out
	}
	defaults := []corev1.Toleration{
		tol(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), tol(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		tol(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule), tol(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		tol(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule), tol(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	own := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "agents", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		hostNetwork bool
		have        []corev1.Toleration
		want        []corev1.Toleration
	}{
		{"none: the defaults in order", false, nil, defaults},
		{"host network: network-unavailable too", true, nil,
			append(slices.Clone(defaults), tol(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))},
		{"the template's own come first", false, []corev1.Toleration{own}, append([]corev1.Toleration{own}, defaults...)},
		{"an exact default is not doubled", false, []corev1.Toleration{tol(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)},
			append([]corev1.Toleration{tol(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)}, defaults[:5]...)},
		// As the built-in controller: a daemon pod is not evicted after tolerationSeconds.
		{"a default with tolerationSeconds is replaced in place", false,
			[]corev1.Toleration{own, tol(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, 300)},
			append([]corev1.Toleration{own, tol(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)}, defaults[0], defaults[2], defaults[3], defaults[4], defaults[5])},
		{"an exact duplicate keeps the timed one as it is", false,
			[]corev1.Toleration{tol(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, 300), tol(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)},
			append([]corev1.Toleration{tol(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, 300), tol(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)}, defaults[1:]...)},
		{"an Equal toleration of a default key is another toleration", false,
			[]corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoExecute}},
			append([]corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoExecute}}, defaults...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &corev1.PodSpec{HostNetwork: tt.hostNetwork, Tolerations: slices.Clone(tt.have)}
			AddDaemonTolerations(spec)
			assert.Equal(t, tt.want, spec.Tolerations)
		})
	}
}
