// Package nodefit decides whether a node suits a pod template, as the per-node workloads (the
// Advanced DaemonSet, BroadcastJob) decide it before creating a pod pinned to the node: the
// template's nodeName, its nodeSelector and required node affinity (k8s.io/component-helpers),
// the node's taints against the template's tolerations plus any a workload adds, and, for the
// workloads that ask for it, the node's spec.unschedulable and allocatable resources. It reads
// nothing but its arguments.
package nodefit

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelpers "k8s.io/component-helpers/resource"
	schedulinghelpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Fit is what a node means for a template's pod.
type Fit struct {
	// Schedule: a new pod may go to the node.
	Schedule bool
	// Continue: a pod already on the node may stay. It differs from Schedule on a node with a
	// NoSchedule taint the pod does not tolerate: nothing new goes there, but what runs is not
	// evicted (only NoExecute evicts).
	Continue bool
}

// Checker is a template's fit rules made ready for many nodes: its required node affinity parsed
// once, its tolerations and requests gathered once. It reads nothing but its template, which must
// not change while the Checker is used.
type Checker struct {
	nodeName    string
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []corev1.Toleration
	requests    corev1.ResourceList
}

// NewChecker prepares template's rules, with extra tolerations besides the template's.
func NewChecker(template *corev1.PodTemplateSpec, extra []corev1.Toleration) *Checker {
	// Only the spec is read; the template's own is not copied.
	pod := &corev1.Pod{Spec: template.Spec}
	tolerations := template.Spec.Tolerations
	if len(extra) > 0 {
		tolerations = append(append(make([]corev1.Toleration, 0, len(tolerations)+len(extra)), tolerations...), extra...)
	}
	return &Checker{
		nodeName:    template.Spec.NodeName,
		affinity:    nodeaffinity.GetRequiredNodeAffinity(pod),
		tolerations: tolerations,
		requests:    resourcehelpers.PodRequests(pod, resourcehelpers.PodResourcesOptions{}),
	}
}

// Check decides the node's fit for template's pod: the template's nodeName (if set) must be the
// node, its nodeSelector and required node affinity must match the node, and every NoSchedule
// and NoExecute taint of the node must be tolerated by the template's tolerations plus extra.
// An untolerated NoSchedule taint keeps new pods out but leaves running ones; an untolerated
// NoExecute one does neither.
func Check(node *corev1.Node, template *corev1.PodTemplateSpec, extra []corev1.Toleration) Fit {
	return NewChecker(template, extra).Check(node, nil)
}

// Check is the package's Check with the Checker's template and tolerations, plus more.
func (c *Checker) Check(node *corev1.Node, more []corev1.Toleration) Fit {
	if c.nodeName != "" && c.nodeName != node.Name {
		return Fit{}
	}
	if ok, err := c.affinity.Match(node); err != nil || !ok {
		return Fit{}
	}
	tolerations := c.tolerations
	if len(more) > 0 {
		tolerations = append(append(make([]corev1.Toleration, 0, len(tolerations)+len(more)), tolerations...), more...)
	}
	scheduling := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	if _, untolerated := schedulinghelpers.FindMatchingUntoleratedTaint(node.Spec.Taints, tolerations, scheduling); !untolerated {
		return Fit{Schedule: true, Continue: true}
	}
	evicting := func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
	_, evicted := schedulinghelpers.FindMatchingUntoleratedTaint(node.Spec.Taints, tolerations, evicting)
	return Fit{Continue: !evicted}
}

// ToleratesUnschedulable is the package's ToleratesUnschedulable with the Checker's tolerations.
func (c *Checker) ToleratesUnschedulable(node *corev1.Node) bool {
	return !node.Spec.Unschedulable || schedulinghelpers.TolerationsTolerateTaint(c.tolerations, &unschedulableTaint)
}

// RequestsFit is the package's RequestsFit with the Checker's requests.
func (c *Checker) RequestsFit(node *corev1.Node) bool {
	for name, want := range c.requests {
		if want.IsZero() {
			continue
		}
		have, ok := node.Status.Allocatable[name]
		if !ok || want.Cmp(have) > 0 {
			return false
		}
	}
	return true
}

// unschedulableTaint is the taint the scheduler reads spec.unschedulable as.
var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// ToleratesUnschedulable reports whether a new pod of template may go to node as far as
// spec.unschedulable goes: the node is schedulable, or the template tolerates the
// node.kubernetes.io/unschedulable NoSchedule taint (the scheduler's rule).
func ToleratesUnschedulable(node *corev1.Node, template *corev1.PodTemplateSpec) bool {
	return NewChecker(template, nil).ToleratesUnschedulable(node)
}

// RequestsFit reports whether the requests of template's pod (the larger of its init
// containers' and the sum of its containers', plus overhead, as the scheduler counts them) are
// each at most the node's allocatable. Other pods on the node are not counted: the scheduler,
// which binds the pod, has the last word.
func RequestsFit(node *corev1.Node, template *corev1.PodTemplateSpec) bool {
	return NewChecker(template, nil).RequestsFit(node)
}
