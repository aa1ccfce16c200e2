package resourcedistribution

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Op is what a namespace's copy needs.
type Op int

const (
	OpCreate Op = iota + 1
	OpUpdate
	OpDelete
)

// Action is one write: Object is the copy to create or the update to send; for a delete, the
// copy to delete.
type Action struct {
	Op        Op
	Namespace string
	Object    metav1.Object
}

// Failure is why a target namespace holds no up-to-date copy: its condition and the message.
type Failure struct {
	Condition appsv1alpha1.ResourceDistributionConditionType
	Message   string
}

// Messages of the two failures the decision finds itself (OpenKruise's words).
const (
	msgConflict    = "conflict with existing resources because of the same namespace, group, version, kind and name"
	msgNamespaceNo = "namespace not found or is terminating"
)

// Plan is a pass's decision: the matched namespaces (the status's desired), the writes, and the
// target namespaces that already failed without a write.
type Plan struct {
	Targets  []string
	Actions  []Action
	Failures map[string]Failure
}

// Matches reports whether the namespace (its name and labels) is one of targets: (all, or
// included, or selected by the label selector) and not excluded. A selector with neither labels
// nor expressions selects nothing, as OpenKruise.
func Matches(t *appsv1alpha1.ResourceDistributionTargets, sel labels.Selector, name string, nsLabels map[string]string) bool {
	if inList(t.ExcludedNamespaces.List, name) {
		return false
	}
	if t.AllNamespaces || inList(t.IncludedNamespaces.List, name) {
		return true
	}
	return sel != nil && !sel.Empty() && sel.Matches(labels.Set(nsLabels))
}

// Selector is the targets' namespace selector (nil when it is empty or invalid: selects none).
func Selector(t *appsv1alpha1.ResourceDistributionTargets) labels.Selector {
	ls := &t.NamespaceLabelSelector
	if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil
	}
	return sel
}

func inList(list []appsv1alpha1.ResourceDistributionNamespace, name string) bool {
	return slices.ContainsFunc(list, func(n appsv1alpha1.ResourceDistributionNamespace) bool { return n.Name == name })
}

// TargetNames are the matched namespaces, sorted: the existing ones the targets choose, and the
// included names that do not exist (they count as desired and fail NamespaceNotExists).
func TargetNames(rd *appsv1alpha1.ResourceDistribution, namespaces []*corev1.Namespace) []string {
	t := &rd.Spec.Targets
	sel := Selector(t)
	seen := map[string]bool{}
	var out []string
	for _, ns := range namespaces {
		if Matches(t, sel, ns.Name, ns.Labels) {
			seen[ns.Name] = true
			out = append(out, ns.Name)
		}
	}
	if !t.AllNamespaces {
		for _, n := range t.IncludedNamespaces.List {
			if n.Name != "" && !seen[n.Name] && !inList(t.ExcludedNamespaces.List, n.Name) {
				seen[n.Name] = true
				out = append(out, n.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Decide is the pass over one distribution. copies are the objects of the resource's kind and
// name that the controller knows, by namespace (its labelled cache and adopted ones); a target
// namespace missing from copies gets a create (a name taken by someone else shows up then).
func Decide(rd *appsv1alpha1.ResourceDistribution, src *Source, namespaces []*corev1.Namespace, copies map[string]metav1.Object) Plan {
	byName := make(map[string]*corev1.Namespace, len(namespaces))
	for _, ns := range namespaces {
		byName[ns.Name] = ns
	}
	p := Plan{Targets: TargetNames(rd, namespaces), Failures: map[string]Failure{}}
	targeted := make(map[string]bool, len(p.Targets))
	for _, name := range p.Targets {
		targeted[name] = true
		ns := byName[name]
		if ns == nil || ns.DeletionTimestamp != nil {
			p.Failures[name] = Failure{appsv1alpha1.ResourceDistributionNamespaceNotExists, msgNamespaceNo}
			continue
		}
		if a, f := decideOne(rd, src, name, copies[name]); f != nil {
			p.Failures[name] = *f
		} else if a != nil {
			p.Actions = append(p.Actions, *a)
		}
	}
	for _, ns := range sortedKeys(copies) {
		obj := copies[ns]
		if targeted[ns] || !controlledBy(obj, rd) || obj.GetDeletionTimestamp() != nil {
			continue
		}
		if n := byName[ns]; n == nil || n.DeletionTimestamp != nil {
			continue // the namespace's deletion takes the copy with it
		}
		p.Actions = append(p.Actions, Action{Op: OpDelete, Namespace: ns, Object: obj})
	}
	return p
}

// decideOne is a target namespace's copy: create when there is none, a conflict when the object
// there is not rd's, an update when it differs from what it should be, nothing otherwise.
func decideOne(rd *appsv1alpha1.ResourceDistribution, src *Source, ns string, existing metav1.Object) (*Action, *Failure) {
	if existing == nil {
		return &Action{Op: OpCreate, Namespace: ns, Object: desiredCopy(rd, src, ns, nil)}, nil
	}
	if !controlledBy(existing, rd) {
		return nil, &Failure{appsv1alpha1.ResourceDistributionConflictOccurred, msgConflict}
	}
	want := desiredCopy(rd, src, ns, existing)
	if upToDate(existing, want) {
		return nil, nil
	}
	return &Action{Op: OpUpdate, Namespace: ns, Object: want}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
