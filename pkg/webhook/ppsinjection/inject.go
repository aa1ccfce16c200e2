// Package ppsinjection is PersistentPodState's pod webhook: at create, a pod of a StatefulSet
// (apps/v1, or apps.kruise.io Advanced StatefulSet) whose PersistentPodState recorded a state for
// the pod's name is steered back there: the required topology keys' recorded values are merged
// into spec.nodeSelector, each preferred term becomes a preferred node affinity term (operator
// In, its weight), and the pod is annotated kruise.io/injected-persistent-pod-state=<name>, as
// OpenKruise does inside its /mutate-pod. Here it is an entry of its own, sent only StatefulSet
// pods (matchConditions on the controller ownerReference), failurePolicy Ignore: a pod created
// while kruise is unreachable is admitted unsteered (it schedules anywhere) rather than blocked.
//
// The recorded node gone: pkg/controller/persistentpodstate drops from the states the values no
// node carries any more, so the next pod is not steered to them; a pod created before it has
// (the node just deleted) gets its required keys as a preferred term instead (InjectOptions.
// NodeGone), so that it is never held Pending for a node that will not come back.
package ppsinjection

import (
	"maps"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
)

const (
	// ConditionName names the matchCondition that sends only StatefulSet pods.
	ConditionName = "statefulset-pod"
	// Expression is that condition: the pod's controller ownerReference is a StatefulSet of
	// group apps or apps.kruise.io.
	Expression = "object != null && has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, " +
		"r.kind == 'StatefulSet' && (r.apiVersion.startsWith('apps/') || r.apiVersion.startsWith('apps.kruise.io/')) && " +
		"has(r.controller) && r.controller)"
	// NodeGoneWeight is the weight of the preferred term the required keys become when the
	// recorded node no longer exists.
	NodeGoneWeight = 100
)

// MatchConditions are the entry's matchConditions: not kube-system nor kruise's namespace, and a
// StatefulSet's pod.
func MatchConditions(kruiseNamespace string) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		podscope.Condition(kruiseNamespace),
		{Name: ConditionName, Expression: Expression},
	}
}

// Owner is the pod's StatefulSet: its API group and name; false when the pod's controller is no
// StatefulSet of apps or apps.kruise.io.
func Owner(pod *corev1.Pod) (group, name string, ok bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "StatefulSet" {
		return "", "", false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || (gv.Group != "apps" && gv.Group != appsv1alpha1.GroupName) {
		return "", "", false
	}
	return gv.Group, ref.Name, true
}

// Select is the PersistentPodState of the workload (group, name) among a namespace's, nil when
// none: the first one not being deleted whose targetRef names a StatefulSet of that group.
func Select(list []appsv1alpha1.PersistentPodState, group, name string) *appsv1alpha1.PersistentPodState {
	for i := range list {
		pps := &list[i]
		ref := pps.Spec.TargetReference
		if pps.DeletionTimestamp != nil || ref.Kind != "StatefulSet" || ref.Name != name {
			continue
		}
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == group {
			return pps
		}
	}
	return nil
}

// Steering is what a pod's recorded state asks of the scheduler.
type Steering struct {
	// NodeSelector are the required keys' recorded values.
	NodeSelector map[string]string
	// Preferred are the preferred terms, with the recorded values (operator In).
	Preferred []corev1.PreferredSchedulingTerm
}

// Steer is the steering of the recorded state: the required keys the state has a value for, and
// one preferred term per preferred term of the spec with a weight the API server accepts (1..100)
// and at least one recorded value. nodeGone: the recorded node no longer exists; the required
// keys are then a preferred term of weight NodeGoneWeight (a required value may be the gone
// node's own, and nothing would ever satisfy it).
func Steer(spec *appsv1alpha1.PersistentPodStateSpec, state appsv1alpha1.PodState, nodeGone bool) Steering {
	var s Steering
	if spec.RequiredPersistentTopology != nil {
		req := map[string]string{}
		for _, k := range spec.RequiredPersistentTopology.NodeTopologyKeys {
			if v, ok := state.NodeTopologyLabels[k]; ok {
				req[k] = v
			}
		}
		if len(req) > 0 {
			if nodeGone {
				s.Preferred = append(s.Preferred, term(NodeGoneWeight, req))
			} else {
				s.NodeSelector = req
			}
		}
	}
	for _, p := range spec.PreferredPersistentTopology {
		if p.Weight < 1 || p.Weight > 100 {
			continue
		}
		vals := map[string]string{}
		for _, k := range p.Preference.NodeTopologyKeys {
			if v, ok := state.NodeTopologyLabels[k]; ok {
				vals[k] = v
			}
		}
		if len(vals) > 0 {
			s.Preferred = append(s.Preferred, term(p.Weight, vals))
		}
	}
	return s
}

// term is a preferred scheduling term requiring each key's value, keys sorted.
func term(weight int32, vals map[string]string) corev1.PreferredSchedulingTerm {
	t := corev1.PreferredSchedulingTerm{Weight: weight}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		t.Preference.MatchExpressions = append(t.Preference.MatchExpressions,
			corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{vals[k]}})
	}
	return t
}

// Operation is one RFC 6902 JSON patch operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch is the JSON patch that applies s to pod and annotates it with the PersistentPodState's
// name: the recorded values override the pod's own nodeSelector entries of the same keys (as
// OpenKruise), the preferred terms are appended to the pod's. None when s asks nothing or the
// pod already carries the annotation (a reinvocation). It does not change pod.
func Patch(pod *corev1.Pod, ppsName string, s Steering) []Operation {
	if len(s.NodeSelector) == 0 && len(s.Preferred) == 0 {
		return nil
	}
	if _, done := pod.Annotations[appsv1alpha1.InjectedPersistentPodStateAnnotation]; done {
		return nil
	}
	annotations := maps.Clone(pod.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[appsv1alpha1.InjectedPersistentPodStateAnnotation] = ppsName
	ops := []Operation{{Op: "add", Path: "/metadata/annotations", Value: annotations}}
	if len(s.NodeSelector) > 0 {
		sel := maps.Clone(pod.Spec.NodeSelector)
		if sel == nil {
			sel = map[string]string{}
		}
		maps.Copy(sel, s.NodeSelector)
		ops = append(ops, Operation{Op: "add", Path: "/spec/nodeSelector", Value: sel})
	}
	if len(s.Preferred) > 0 {
		aff := &corev1.Affinity{}
		if pod.Spec.Affinity != nil {
			aff = pod.Spec.Affinity.DeepCopy()
		}
		if aff.NodeAffinity == nil {
			aff.NodeAffinity = &corev1.NodeAffinity{}
		}
		aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, s.Preferred...)
		ops = append(ops, Operation{Op: "add", Path: "/spec/affinity", Value: aff})
	}
	return ops
}
