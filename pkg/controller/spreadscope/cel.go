package spreadscope

import (
	"regexp"

	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
	"github.com/nodekruise/kruise/pkg/process/selectorcel"
)

// The conditions of WorkloadSpread's pod entries. The API server evaluates them before calling
// kruise, so a pod of a workload no WorkloadSpread targets never reaches it: its create, delete
// and eviction never wait on kruise, whatever the failurePolicy.
const (
	// NoneExpression is the condition with no WorkloadSpread: never call.
	NoneExpression = webhookscope.NoneExpression
	// MaxExpressionLength bounds each condition (the API server limits a matchCondition's size
	// and cost; an OR over many spreads grows linearly). Beyond it the condition falls back to
	// the spreads' namespaces: coarser, still scoped. 32 KiB as pubscope and sidecarsetscope.
	MaxExpressionLength = 32 << 10
)

// Terms are one WorkloadSpread's parts of the three conditions.
type Terms struct {
	// Create is over the pod being created (object): its controller is the target (for a
	// Deployment, one of its ReplicaSets, named "<deployment>-<hash>").
	Create string `json:"create,omitempty"`
	// Delete is over the stored pod (oldObject) of a DELETE, likewise.
	Delete string `json:"delete,omitempty"`
	// Eviction is over an eviction's namespace and name (the pod's name: an eviction carries no
	// pod), the names the target's pods are made with; the namespace alone for a kind whose
	// pods kruise cannot name.
	Eviction string `json:"eviction,omitempty"`
}

// SpreadTerms are ws's terms; none for a spread without a target or one being deleted.
func SpreadTerms(ws *appsv1alpha1.WorkloadSpread) Terms {
	ref := ws.Spec.TargetReference
	if ref == nil || ref.Name == "" || ws.DeletionTimestamp != nil {
		return Terms{}
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return Terms{}
	}
	ns := "request.namespace == " + selectorcel.Quote(ws.Namespace)
	n := regexp.QuoteMeta(ref.Name)
	group, kind, nameMatch := gv.Group, ref.Kind, "r.name == "+selectorcel.Quote(ref.Name)
	var names string
	switch {
	case gv.Group == "apps" && ref.Kind == "Deployment":
		// Its pods are its ReplicaSets': <deployment>-<pod-template-hash>-<five characters>.
		kind, nameMatch = "ReplicaSet", "r.name.matches("+selectorcel.Quote("^"+n+"-[a-z0-9]+$")+")"
		if len(ref.Name) <= 40 {
			names = "^" + n + "-[a-z0-9]+-[a-z0-9]{5}$"
		}
	case (gv.Group == "apps" || gv.Group == appsv1alpha1.SchemeGroupVersion.Group) && ref.Kind == "StatefulSet":
		names = "^" + n + "-[0-9]+$"
	case len(ref.Name) <= 57:
		// CloneSet, ReplicaSet, Job and most others: a generated name, the owner's name, '-' and
		// five characters (the API server cuts the prefix to 58 characters first).
		names = "^" + n + "-[a-z0-9]{5}$"
	}
	owned := func(obj string) string {
		api := "r.apiVersion.startsWith(" + selectorcel.Quote(group+"/") + ")"
		if group == "" {
			api = "r.apiVersion == 'v1'"
		}
		refs := obj + ".metadata.ownerReferences"
		return "(" + ns + " && has(" + refs + ") && " + refs + ".exists(r, has(r.controller) && r.controller && " + api +
			" && r.kind == " + selectorcel.Quote(kind) + " && " + nameMatch + "))"
	}
	t := Terms{Create: owned("object"), Delete: owned("oldObject"), Eviction: "(" + ns + ")"}
	if names != "" {
		t.Eviction = "(" + ns + " && request.name.matches(" + selectorcel.Quote(names) + "))"
	}
	return t
}

// Guards are ANDed before each condition's OR: the object exists; a DELETE matters only for a
// pod a WorkloadSpread placed (it carries the annotation).
const (
	CreateGuard   = "object != null && "
	DeleteGuard   = "oldObject != null && has(oldObject.metadata.annotations) && '" + appsv1alpha1.MatchedWorkloadSpreadAnnotation + "' in oldObject.metadata.annotations && "
	EvictionGuard = ""
)

// Expressions are the three conditions: the OR of the terms, sorted and deduplicated so that the
// same spreads give the same text. Any one longer than MaxExpressionLength makes all three the
// spreads' namespaces; coarse says so.
func Expressions(terms []Terms, namespaces []string) (create, del, eviction string, coarse bool) {
	var c, d, e []string
	for _, t := range terms {
		c, d, e = appendTerm(c, t.Create), appendTerm(d, t.Delete), appendTerm(e, t.Eviction)
	}
	create, del, eviction = webhookscope.AnyOf(CreateGuard, c), webhookscope.AnyOf(DeleteGuard, d), webhookscope.AnyOf(EvictionGuard, e)
	if len(create) <= MaxExpressionLength && len(del) <= MaxExpressionLength && len(eviction) <= MaxExpressionLength {
		return create, del, eviction, false
	}
	ns := webhookscope.NamespacesExpression(namespaces)
	return ns, ns, ns, true
}

func appendTerm(list []string, t string) []string {
	if t == "" {
		return list
	}
	return append(list, t)
}
