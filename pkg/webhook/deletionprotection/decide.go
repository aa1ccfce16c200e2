// Package deletionprotection is the admission webhook of the
// policy.kruise.io/delete-protection label where its rule needs a lookup:
// a Namespace labelled Cascading is refused while it holds active pods or
// Bound PersistentVolumeClaims, a CustomResourceDefinition labelled
// Cascading while objects of it remain. Every other case of the label
// (Always on every kind, Cascading on the workloads, which read only the
// object itself) is the ValidatingAdmissionPolicy kruise-deletion-protection
// of the chart, which holds while kruise is down. The decisions here are
// pure functions; Admit only reads the request and the lookups.
package deletionprotection

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The label and its values, as OpenKruise names them (apis/policy/v1alpha1).
const (
	// Label protects the object it is on from deletion.
	Label = "policy.kruise.io/delete-protection"
	// Always refuses every deletion while the label is there.
	Always = "Always"
	// Cascading refuses a deletion while the object still has active
	// children (pods of a workload, pods and claims of a namespace, objects
	// of a CRD).
	Cascading = "Cascading"
)

// MessagePrefix starts every refusal, as OpenKruise's do, so that a script
// that looks for OpenKruise's refusal finds kruise's.
const MessagePrefix = "forbidden by ResourcesProtectionDeletion"

// CRDCascadingGate is the feature gate a Cascading CRD needs (named here
// for the message; pkg/process/features owns it).
const CRDCascadingGate = "DeletionProtectionForCRDCascadingGate"

// Why a deletion is refused (the rejection metric's reasons).
const (
	// ReasonAlways: the object is labelled Always.
	ReasonAlways = "Always"
	// ReasonNamespaceNotEmpty: a Cascading namespace still holds active pods
	// or Bound claims.
	ReasonNamespaceNotEmpty = "NamespaceNotEmpty"
	// ReasonCRDHasObjects: a Cascading CRD still has objects.
	ReasonCRDHasObjects = "CRDHasObjects"
	// ReasonCRDCascadingGateOff: a Cascading CRD while its gate is off.
	ReasonCRDCascadingGateOff = "CRDCascadingGateOff"
)

// Target names the object a request deletes, as the messages say it.
type Target struct {
	// Kind is the object's kind ("Namespace").
	Kind string
	// Resource is the resource with its group, as kubectl takes it
	// ("namespaces", "customresourcedefinitions.apiextensions.k8s.io").
	Resource string
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	Name      string
}

func (t Target) String() string {
	if t.Namespace == "" {
		return t.Kind + " " + t.Name
	}
	return t.Kind + " " + t.Namespace + "/" + t.Name
}

// unlabel is the command that removes the label.
func (t Target) unlabel() string {
	cmd := "kubectl label " + t.Resource + " " + t.Name
	if t.Namespace != "" {
		cmd += " -n " + t.Namespace
	}
	return cmd + " " + Label + "-"
}

// Decision is what the webhook answers: Refused with Reason and Message, or
// allowed.
type Decision struct {
	Refused bool
	Reason  string
	Message string
}

// Protection is the label's value on obj when it asks for a check: Always
// or Cascading, and the object is not already being deleted (its deletion
// was admitted before; refusing again would only block its finalizers'
// bookkeeping). Any other value (absent, a typo) protects nothing, as in
// OpenKruise.
func Protection(obj metav1.Object) string {
	if obj == nil || obj.GetDeletionTimestamp() != nil {
		return ""
	}
	switch v := obj.GetLabels()[Label]; v {
	case Always, Cascading:
		return v
	}
	return ""
}

func always(t Target) Decision {
	return Decision{Refused: true, Reason: ReasonAlways, Message: fmt.Sprintf(
		"%s: %s is labelled %s=%s; remove the label to delete it: %s", MessagePrefix, t, Label, Always, t.unlabel())}
}

// NamespaceChildren are what a Cascading namespace must no longer hold.
type NamespaceChildren struct {
	// ActivePods are pods neither Succeeded, Failed nor being deleted.
	ActivePods int
	// BoundClaims are PersistentVolumeClaims Bound and not being deleted.
	BoundClaims int
}

// CountNamespaceChildren counts pods and claims as a Cascading namespace
// rule does (OpenKruise's: an active pod, or a Bound claim, keeps it).
func CountNamespaceChildren(pods []corev1.Pod, claims []corev1.PersistentVolumeClaim) NamespaceChildren {
	var c NamespaceChildren
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			c.ActivePods++
		}
	}
	for i := range claims {
		pvc := &claims[i]
		if pvc.DeletionTimestamp == nil && pvc.Status.Phase == corev1.ClaimBound {
			c.BoundClaims++
		}
	}
	return c
}

// DecideNamespace judges deleting a namespace labelled protection (see
// Protection) holding children.
func DecideNamespace(t Target, protection string, children NamespaceChildren) Decision {
	switch protection {
	case Always:
		return always(t)
	case Cascading:
		if children.ActivePods == 0 && children.BoundClaims == 0 {
			return Decision{}
		}
		var held []string
		if children.ActivePods > 0 {
			held = append(held, plural(children.ActivePods, "active pod"))
		}
		if children.BoundClaims > 0 {
			held = append(held, plural(children.BoundClaims, "Bound PersistentVolumeClaim"))
		}
		return Decision{Refused: true, Reason: ReasonNamespaceNotEmpty, Message: fmt.Sprintf(
			"%s: %s is labelled %s=%s and still holds %s; delete those first, or remove the label: %s",
			MessagePrefix, t, Label, Cascading, strings.Join(held, " and "), t.unlabel())}
	}
	return Decision{}
}

// DecideCRDGateOff judges deleting a CRD labelled protection while the
// gate DeletionProtectionForCRDCascadingGate is off: Cascading cannot be
// checked, so it is refused (as in OpenKruise) rather than ignored.
func DecideCRDGateOff(t Target, protection string) Decision {
	switch protection {
	case Always:
		return always(t)
	case Cascading:
		return Decision{Refused: true, Reason: ReasonCRDCascadingGateOff, Message: fmt.Sprintf(
			"%s: %s is labelled %s=%s, which kruise checks only with the feature gate %s (it is not enabled); remove the label to delete it: %s",
			MessagePrefix, t, Label, Cascading, CRDCascadingGate, t.unlabel())}
	}
	return Decision{}
}

// DecideCRD judges deleting a CRD labelled protection that has objects
// objects of its storage version not being deleted (CountActive).
func DecideCRD(t Target, protection string, objects int) Decision {
	switch protection {
	case Always:
		return always(t)
	case Cascading:
		if objects == 0 {
			return Decision{}
		}
		return Decision{Refused: true, Reason: ReasonCRDHasObjects, Message: fmt.Sprintf(
			"%s: %s is labelled %s=%s and %s of it remain; delete those first, or remove the label: %s",
			MessagePrefix, t, Label, Cascading, plural(objects, "object"), t.unlabel())}
	}
	return Decision{}
}

// CountActive counts the objects not being deleted.
func CountActive(objs []metav1.PartialObjectMetadata) int {
	n := 0
	for i := range objs {
		if objs[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
