// Package webhookscope is the mechanism the scope controllers share (pubscope, sidecarsetscope,
// spreadscope): keep one matchCondition of some entries of one webhook configuration written,
// from a function of the controller's caches, so that the API server calls kruise only for the
// objects some kruise object needs. Objects admitted ahead of the leader's cache are routed at
// admission (Include) and recorded in an annotation of the configuration as pending; the leader
// keeps their terms in the conditions until its cache shows them (Settle). Every write is a
// strategic merge patch conditional on the resourceVersion read, so a writer never overwrites a
// condition computed by another without what it added; the other entries, conditions and the
// caBundles are left as the API server has them.
//
// What the conditions say is the kinds' own (each controller's Want function); this package
// knows nothing of budgets, SidecarSets or WorkloadSpreads.
package webhookscope

import (
	"context"
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Kind is the kind of webhook configuration.
type Kind string

// The two kinds.
const (
	Mutating   Kind = "MutatingWebhookConfiguration"
	Validating Kind = "ValidatingWebhookConfiguration"
)

// Target names the condition kept: matchCondition Condition of the entries Entries of
// configuration Configuration, and the annotation PendingAnnotation of that configuration.
type Target struct {
	Kind              Kind
	Configuration     string
	Entries           []string
	Condition         string
	PendingAnnotation string
}

// Scope is the condition's expression per entry name.
type Scope map[string]string

// Equal reports whether s and o have the same expressions.
func (s Scope) Equal(o Scope) bool {
	if len(s) != len(o) {
		return false
	}
	for k, v := range s {
		if w, ok := o[k]; !ok || v != w {
			return false
		}
	}
	return true
}

// State is what the configuration holds of the target.
type State struct {
	// Scope holds every entry's expression ("" where an entry lacks the condition).
	Scope Scope
	// Pending is the raw value of PendingAnnotation ("" without it).
	Pending string
	// ResourceVersion of the configuration read.
	ResourceVersion string
	// Object is the configuration, for Events.
	Object runtime.Object
}

// Read is the target's State in a configuration object; false when it is not the target's kind
// or lacks one of the entries (webhooks installed otherwise, or the gate is off: nothing to keep).
func (t Target) Read(obj runtime.Object) (State, bool) {
	var meta metav1.Object
	var entries []struct {
		name  string
		conds []admissionregistrationv1.MatchCondition
	}
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		if t.Kind != Mutating {
			return State{}, false
		}
		meta = c
		for _, w := range c.Webhooks {
			entries = append(entries, struct {
				name  string
				conds []admissionregistrationv1.MatchCondition
			}{w.Name, w.MatchConditions})
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		if t.Kind != Validating {
			return State{}, false
		}
		meta = c
		for _, w := range c.Webhooks {
			entries = append(entries, struct {
				name  string
				conds []admissionregistrationv1.MatchCondition
			}{w.Name, w.MatchConditions})
		}
	default:
		return State{}, false
	}
	s := State{Scope: Scope{}, Pending: meta.GetAnnotations()[t.PendingAnnotation], ResourceVersion: meta.GetResourceVersion(), Object: obj}
	for _, name := range t.Entries {
		found := false
		for _, e := range entries {
			if e.name != name {
				continue
			}
			found = true
			s.Scope[name] = ""
			for _, mc := range e.conds {
				if mc.Name == t.Condition {
					s.Scope[name] = mc.Expression
				}
			}
		}
		if !found {
			return State{}, false
		}
	}
	return s, true
}

// Get reads the configuration live; nil without error when it does not exist.
func (t Target) Get(ctx context.Context, client kubernetes.Interface) (runtime.Object, error) {
	var (
		obj runtime.Object
		err error
	)
	switch t.Kind {
	case Mutating:
		obj, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, t.Configuration, metav1.GetOptions{})
	default:
		obj, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, t.Configuration, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Write sets the condition of every entry of want and PendingAnnotation (removed when pending is
// "") with a strategic merge patch: webhooks merge by name and their matchConditions by name, so
// nothing else is touched. resourceVersion, when set, makes the write conditional (409 Conflict
// if the configuration changed since). It returns the written resourceVersion.
func (t Target) Write(ctx context.Context, client kubernetes.Interface, want Scope, pending, resourceVersion string) (string, error) {
	type condition struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	}
	type entry struct {
		Name            string      `json:"name"`
		MatchConditions []condition `json:"matchConditions"`
	}
	var annotation any // null removes it
	if pending != "" {
		annotation = pending
	}
	meta := map[string]any{"annotations": map[string]any{t.PendingAnnotation: annotation}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	var webhooks []entry
	for _, name := range t.Entries {
		if expr, ok := want[name]; ok {
			webhooks = append(webhooks, entry{Name: name, MatchConditions: []condition{{Name: t.Condition, Expression: expr}}})
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta, "webhooks": webhooks})
	if err != nil {
		return "", fmt.Errorf("encoding the matchConditions patch: %w", err)
	}
	var out metav1.Object
	switch t.Kind {
	case Mutating:
		out, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, t.Configuration, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	default:
		out, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, t.Configuration, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("patching condition %s of %s %s: %w", t.Condition, t.Kind, t.Configuration, err)
	}
	return out.GetResourceVersion(), nil
}

// WaitServed returns once the API server's cache serves the configuration at resourceVersion or
// later: a list at that resourceVersion with NotOlderThan is answered from the watch cache once
// it has caught up, and the API server's admission reads the configurations through an informer
// fed by that same cache.
func (t Target) WaitServed(ctx context.Context, client kubernetes.Interface, resourceVersion string) error {
	opts := metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector(metav1.ObjectNameField, t.Configuration).String(),
		ResourceVersion:      resourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	}
	var err error
	switch t.Kind {
	case Mutating:
		_, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, opts)
	default:
		_, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, opts)
	}
	if err != nil {
		return fmt.Errorf("waiting for the API server to serve %s %s at %s: %w", t.Kind, t.Configuration, resourceVersion, err)
	}
	return nil
}
