package pubscope

import (
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
	"github.com/nodekruise/kruise/pkg/process/selectorcel"
)

// The expressions of the two pod webhooks' condition ConditionName. The API server evaluates a
// webhook's matchConditions before calling it, so a pod no budget covers never reaches kruise: an
// outage of kruise cannot block its delete, eviction or update, whatever the failurePolicy.
const (
	// NoneExpression is the condition with no budget: never call.
	NoneExpression = webhookscope.NoneExpression
	// MaxExpressionLength bounds each condition. The API server limits a matchCondition's size
	// and cost (estimated when the configuration is written, and per call); an OR over many
	// budgets grows linearly. Beyond it the condition falls back to the budgets' namespaces
	// (coarser, still scoped). 32 KiB as sidecarsetscope, measured there on kube-apiserver 1.34.
	MaxExpressionLength = 32 << 10
)

const owners = "oldObject.metadata.ownerReferences"

// Terms are one budget's parts of the two conditions; "" where it covers nothing.
type Terms struct {
	// Pod is over the stored pod of a DELETE or UPDATE (oldObject).
	Pod string `json:"pod,omitempty"`
	// Eviction is over an eviction's request: its namespace and name (the pod's name).
	Eviction string `json:"eviction,omitempty"`
}

// BudgetTerms are pub's terms. Pods are the pods of its namespace (any order); they give the
// eviction term of a selector budget, as the name patterns of the pods it covers now (an
// eviction carries the pod's name only).
func BudgetTerms(pub *policyv1alpha1.PodUnavailableBudget, pods []PodName) Terms {
	ns := "request.namespace == " + selectorcel.Quote(pub.Namespace)
	nsOnly := Terms{Pod: "(" + ns + ")", Eviction: "(" + ns + ")"}
	if ref := pub.Spec.TargetReference; ref != nil {
		owner, names, ok := targetTerms(ref)
		if !ok {
			// A kind whose pods kruise cannot name: every pod of the namespace, the handler decides.
			return nsOnly
		}
		return Terms{Pod: "(" + ns + " && " + owner + ")", Eviction: "(" + ns + " && request.name.matches(" + selectorcel.Quote(names) + "))"}
	}
	parts, ok := selectorParts(pub.Spec.Selector)
	if !ok {
		return nsOnly
	}
	sel, _ := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
	var patterns []string
	for _, p := range pods {
		if p.Namespace == pub.Namespace && sel.Matches(labels.Set(p.Labels)) {
			patterns = append(patterns, p.Pattern())
		}
	}
	t := Terms{Pod: "(" + ns + " && " + strings.Join(parts, " && ") + ")"}
	if len(patterns) > 0 {
		t.Eviction = "(" + ns + " && request.name.matches(" + selectorcel.Quote(alternation(patterns)) + "))"
	}
	return t
}

// targetTerms are the pod condition (the pod's owner) and the regular expression of the pods'
// names of a workload kind kruise knows how it names and owns its pods; ok is false for others.
func targetTerms(ref *policyv1alpha1.TargetReference) (owner, names string, ok bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.Name == "" {
		return "", "", false
	}
	n := regexp.QuoteMeta(ref.Name)
	ownedBy := func(group, kind, nameMatch string) string {
		api := "r.apiVersion.startsWith(" + selectorcel.Quote(group+"/") + ")"
		if group == "" {
			api = "r.apiVersion == 'v1'"
		}
		return "has(" + owners + ") && " + owners + ".exists(r, " + api + " && r.kind == " + selectorcel.Quote(kind) + " && " + nameMatch + ")"
	}
	exact := "r.name == " + selectorcel.Quote(ref.Name)
	// A pod's generated name is its owner's name, '-', and five characters; the API server cuts
	// the prefix to 58 characters first (names.SimpleNameGenerator). Longer owners: not named here.
	generated := len(ref.Name) <= 57
	switch {
	case gv.Group == "apps.kruise.io" && ref.Kind == "CloneSet":
		return ownedBy(gv.Group, ref.Kind, exact), "^" + n + "-[a-z0-9]{5}$", true
	case (gv.Group == "apps.kruise.io" || gv.Group == "apps") && ref.Kind == "StatefulSet":
		return ownedBy(gv.Group, ref.Kind, exact), "^" + n + "-[0-9]+$", true
	case generated && ((gv.Group == "apps" && ref.Kind == "ReplicaSet") || (gv.Group == "" && ref.Kind == "ReplicationController")):
		return ownedBy(gv.Group, ref.Kind, exact), "^" + n + "-[a-z0-9]{5}$", true
	case len(ref.Name) <= 40 && gv.Group == "apps" && ref.Kind == "Deployment":
		// Its pods are its ReplicaSets': <deployment>-<pod-template-hash>-<five characters>.
		return ownedBy("apps", "ReplicaSet", "r.name.matches("+selectorcel.Quote("^"+n+"-[a-z0-9]+$")+")"), "^" + n + "-[a-z0-9]+-[a-z0-9]{5}$", true
	}
	return "", "", false
}

// PodName is what a pod's eviction pattern is made of.
type PodName struct {
	Namespace, Name, GenerateName string
	Labels                        map[string]string
	// Owner is the pod's controller's name, "" without one.
	Owner string
}

// Pattern is the regular expression of the names of pods made as this one was: a generated
// name's prefix and five characters; a StatefulSet-style ordinal or a CloneSet-style
// instance id after the controller's name; else the name itself. Pods made later the same way
// match it, so the condition is not rewritten for every new pod.
func (p PodName) Pattern() string {
	if p.GenerateName != "" && len(p.Name) == len(p.GenerateName)+5 && strings.HasPrefix(p.Name, p.GenerateName) {
		return regexp.QuoteMeta(p.GenerateName) + "[a-z0-9]{5}"
	}
	if p.Owner != "" && strings.HasPrefix(p.Name, p.Owner+"-") {
		suffix := p.Name[len(p.Owner)+1:]
		switch {
		case digits.MatchString(suffix):
			return regexp.QuoteMeta(p.Owner) + "-[0-9]+"
		case instanceID.MatchString(suffix):
			return regexp.QuoteMeta(p.Owner) + "-[a-z0-9]{5}"
		}
	}
	return regexp.QuoteMeta(p.Name)
}

var (
	digits     = regexp.MustCompile(`^[0-9]+$`)
	instanceID = regexp.MustCompile(`^[a-z0-9]{5}$`)
)

// alternation is one anchored regular expression matching any of patterns.
func alternation(patterns []string) string {
	patterns = slices.Clone(patterns)
	slices.Sort(patterns)
	patterns = slices.Compact(patterns)
	if len(patterns) == 1 {
		return "^" + patterns[0] + "$"
	}
	return "^(?:" + strings.Join(patterns, "|") + ")$"
}

// Expressions are the two conditions: the OR of the budgets' terms, sorted and deduplicated so
// that the same budgets give the same text. Either one longer than MaxExpressionLength falls
// back to the budgets' namespaces; fellBack says so.
func Expressions(terms []Terms, namespaces []string) (pod, eviction string, fellBack bool) {
	var podTerms, evictionTerms []string
	for _, t := range terms {
		if t.Pod != "" {
			podTerms = append(podTerms, t.Pod)
		}
		if t.Eviction != "" {
			evictionTerms = append(evictionTerms, t.Eviction)
		}
	}
	pod, eviction = webhookscope.AnyOf("oldObject != null && ", podTerms), webhookscope.AnyOf("", evictionTerms)
	if len(pod) <= MaxExpressionLength && len(eviction) <= MaxExpressionLength {
		return pod, eviction, false
	}
	coarse := webhookscope.NamespacesExpression(namespaces)
	return coarse, coarse, true
}

// selectorParts are the requirements of sel over the stored pod's labels, to be ANDed; ok is
// false for a selector that is missing, empty or does not parse (the budget's validation refuses
// those; such a budget is scoped to its namespace).
func selectorParts(sel *metav1.LabelSelector) ([]string, bool) {
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return nil, false
	}
	parts := selectorcel.Parts(sel, "oldObject")
	return parts, parts != nil
}

// NotTerminatingConditionName names the chart's condition of vpod.kb.io that never sends a
// request for a pod already being deleted: its deletion was judged when it began, and the
// kubelet's final DELETE of a terminated pod must not wait on kruise (during an outage it would
// hold the pod Terminating).
const NotTerminatingConditionName = "not-terminating"

// NotTerminatingExpression is that condition.
const NotTerminatingExpression = "oldObject == null || !has(oldObject.metadata.deletionTimestamp)"

// DisruptiveUpdateConditionName names the chart's condition of vpod.kb.io that sends an update
// only when it may make the pod unavailable (disruption.Classify): it changes the spec, or adds
// a label of prefix unavailable-pod.kruise.io/. Labels, annotations and status never reach kruise.
const DisruptiveUpdateConditionName = "disruptive-update"

// DisruptiveUpdateExpression is that condition (test/chart checks the chart has it).
var DisruptiveUpdateExpression = "request.operation != 'UPDATE' || object.spec != oldObject.spec || (" +
	unavailableLabel("object") + " && !" + unavailableLabel("oldObject") + ")"

func unavailableLabel(obj string) string {
	return "(has(" + obj + ".metadata.labels) && " + obj + ".metadata.labels.exists(k, k.startsWith('" +
		policyv1alpha1.PodUnavailableLabelPrefix + "')))"
}
