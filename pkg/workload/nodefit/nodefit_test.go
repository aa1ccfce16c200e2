package nodefit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		}},
	}
}

func tolerate(key string, effect corev1.TaintEffect) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
}

func TestCheck(t *testing.T) {
	noSchedule := corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}
	affinity := func(op corev1.NodeSelectorOperator) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: []string{"a"}}}}},
		}}}
	}
	run, keep, none := Fit{true, true}, Fit{false, true}, Fit{}
	tests := []struct {
		name  string
		node  *corev1.Node
		spec  corev1.PodSpec
		extra []corev1.Toleration
		want  Fit
	}{
		{"plain node", node("n1"), corev1.PodSpec{}, nil, run},
		{"nodeName is the node", node("n1"), corev1.PodSpec{NodeName: "n1"}, nil, run},
		{"nodeName is another node", node("n1"), corev1.PodSpec{NodeName: "n2"}, nil, none},
		{"nodeSelector matches", node("n1"), corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}, nil, run},
		{"nodeSelector does not match", node("n1"), corev1.PodSpec{NodeSelector: map[string]string{"zone": "b"}}, nil, none},
		{"required affinity matches", node("n1"), corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpIn)}, nil, run},
		{"required affinity does not match", node("n1"), corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpNotIn)}, nil, none},
		{"untolerated NoSchedule keeps what runs", node("n1", noSchedule), corev1.PodSpec{}, nil, keep},
		{"untolerated NoExecute", node("n1", noExecute), corev1.PodSpec{}, nil, none},
		{"PreferNoSchedule is ignored", node("n1", corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), corev1.PodSpec{}, nil, run},
		{"template tolerates", node("n1", noExecute), corev1.PodSpec{Tolerations: []corev1.Toleration{tolerate("dedicated", "")}}, nil, run},
		{"extra tolerates", node("n1", noExecute), corev1.PodSpec{}, []corev1.Toleration{tolerate("dedicated", corev1.TaintEffectNoExecute)}, run},
		{"extra tolerates one effect only", node("n1", noExecute, noSchedule), corev1.PodSpec{}, []corev1.Toleration{tolerate("dedicated", corev1.TaintEffectNoExecute)}, keep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := &corev1.PodTemplateSpec{Spec: tt.spec}
			before := len(tpl.Spec.Tolerations)
			assert.Equal(t, tt.want, Check(tt.node, tpl, tt.extra))
			assert.Len(t, tpl.Spec.Tolerations, before, "the template is not changed")
		})
	}
}

func TestToleratesUnschedulable(t *testing.T) {
	cordoned := node("n1")
	cordoned.Spec.Unschedulable = true
	plain := &corev1.PodTemplateSpec{}
	tolerating := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)}}}
	assert.True(t, ToleratesUnschedulable(node("n1"), plain), "a schedulable node")
	assert.False(t, ToleratesUnschedulable(cordoned, plain), "a cordoned node, not tolerated")
	assert.True(t, ToleratesUnschedulable(cordoned, tolerating), "a cordoned node, tolerated")
}

func TestRequestsFit(t *testing.T) {
	tpl := func(cpu string, initCPU string) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		if cpu != "" {
			t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		if initCPU != "" {
			t.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(initCPU)}}}}
		}
		return t
	}
	assert.True(t, RequestsFit(node("n1"), tpl("", "")), "no requests")
	assert.True(t, RequestsFit(node("n1"), tpl("2", "")), "requests equal to allocatable")
	assert.False(t, RequestsFit(node("n1"), tpl("2500m", "")), "more than allocatable")
	assert.False(t, RequestsFit(node("n1"), tpl("1", "3")), "an init container asking more")
	gpu := tpl("", "")
	gpu.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
	assert.False(t, RequestsFit(node("n1"), gpu), "an extended resource the node lacks")
}
