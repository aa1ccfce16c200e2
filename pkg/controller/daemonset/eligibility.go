package daemonset

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/nodefit"
)

// Eligibility is what a node means for the DaemonSet's pod.
type Eligibility struct {
	// ShouldRun: the node should run the pod; one is created when it has none.
	ShouldRun bool
	// ShouldContinueRunning: a pod already on the node may stay. It differs from ShouldRun on a
	// node with a NoSchedule taint the pod does not tolerate: nothing new goes there, but what
	// runs is not evicted (only NoExecute evicts).
	ShouldContinueRunning bool
}

// daemonTolerations are the tolerations the built-in DaemonSet controller gives every daemon
// pod (of the taints the built-in controllers put on nodes, corev1.TaintNode*), so that a node's conditions (which the node lifecycle controller turns into these taints)
// neither evict nor keep out the pod that is the node's own service; network-unavailable is only
// tolerated by pods of the host network, which do not need the pod network.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	out := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		out = append(out, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return out
}

// AddDaemonTolerations gives spec the daemon tolerations as the built-in controller does: one
// the template lacks (same key, operator, value and effect) is appended; one it has with a
// tolerationSeconds is replaced in place by the daemon's, which has none, so that a daemon pod is
// never evicted for its node's conditions; when the template already has it exactly (one of
// several duplicates suffices), the template's are left as they are.
func AddDaemonTolerations(spec *corev1.PodSpec) {
	for _, want := range daemonTolerations(spec.HostNetwork) {
		var matching []int
		exact := false
		for i, have := range spec.Tolerations {
			if have.MatchToleration(&want) {
				matching = append(matching, i)
				exact = exact || have.TolerationSeconds == nil
			}
		}
		switch {
		case len(matching) == 0:
			spec.Tolerations = append(spec.Tolerations, want)
		case !exact:
			for _, i := range matching {
				spec.Tolerations[i] = want
			}
		}
	}
}

// NodeEligibility decides whether node should run a pod of template, as the built-in DaemonSet
// controller decides it (nodefit.Check): the template's nodeName, nodeSelector and required node
// affinity, and the node's NoSchedule and NoExecute taints against the template's tolerations
// plus the daemon tolerations. spec.unschedulable itself is not looked at: the node lifecycle
// controller taints such a node, and daemon pods tolerate that taint.
func NodeEligibility(node *corev1.Node, template *corev1.PodTemplateSpec) Eligibility {
	// Whether a taint is tolerated does not depend on tolerationSeconds, so the daemon
	// tolerations are simply added (AddDaemonTolerations' replacing only matters on the pod).
	fit := nodefit.Check(node, template, daemonTolerations(template.Spec.HostNetwork))
	return Eligibility{ShouldRun: fit.Schedule, ShouldContinueRunning: fit.Continue}
}
