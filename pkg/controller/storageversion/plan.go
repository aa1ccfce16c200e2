// Package storageversion moves the objects of kruise's CRDs that are stored in another version
// than the CRD's storage version (written by an older kruise, or by OpenKruise: its released
// v1.9.0 stores CloneSets and ContainerRecreateRequests as v1alpha1) to the storage version, and
// then leaves only the storage version in the CRD's status.storedVersions, as
// kube-storage-version-migrator does for the built-in kinds.
//
// Why it matters: a kind whose versions differ converts through kruise's /convert, which the API
// server calls only on ready kruise-controller replicas. As long as objects are stored in the old
// version, every read of them in the new one needs a ready replica, and kruise's own caches read
// them. Once they are rewritten, no read of the storage version needs /convert at all.
//
// An object is rewritten by an empty merge patch: the API server reads it (converting it as any
// read does), finds nothing to change, and stores it again encoded in the storage version; its
// content, generation and status stay as they are.
package storageversion

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Action is what a CRD needs.
type Action string

const (
	// ActionNone: every object is stored in the storage version.
	ActionNone Action = ""
	// ActionMigrate: rewrite every object, then drop Stale from storedVersions.
	ActionMigrate Action = "Migrate"
	// ActionBlocked: objects are stored in another version, but reading them in the storage
	// version needs a conversion the CRD does not have: rewriting them would store a wrong
	// conversion for good. Why says so.
	ActionBlocked Action = "Blocked"
)

// Decision is Decide's answer for one CRD.
type Decision struct {
	Action Action
	// Resource is the CRD's resource in its storage version.
	Resource schema.GroupVersionResource
	// Storage is the storage version; Stale the other versions objects may be stored in.
	Storage string
	Stale   []string
	Why     string
}

// Decide reads crd. needsWebhook says whether its versions differ in more than their name, so
// that only the webhook converts between them (kruise's /convert); a CRD whose versions have the
// same schema converts correctly with strategy None.
func Decide(crd *apiextensionsv1.CustomResourceDefinition, needsWebhook bool) (Decision, error) {
	d := Decision{Storage: storageOf(crd)}
	if d.Storage == "" {
		return d, fmt.Errorf("CRD %s has no storage version", crd.Name)
	}
	d.Resource = schema.GroupVersionResource{Group: crd.Spec.Group, Version: d.Storage, Resource: crd.Spec.Names.Plural}
	for _, v := range crd.Status.StoredVersions {
		if v != d.Storage && !slices.Contains(d.Stale, v) {
			d.Stale = append(d.Stale, v)
		}
	}
	if len(d.Stale) == 0 {
		return d, nil
	}
	webhook := crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	if needsWebhook && !webhook {
		d.Action = ActionBlocked
		d.Why = fmt.Sprintf("objects may be stored as %v, which only kruise's /convert turns into %s, and the CRD's conversion is not the webhook "+
			"(kruise-controller runs without --webhook-enabled or --webhook-conversion-crds): they are left as they are", d.Stale, d.Storage)
		return d, nil
	}
	d.Action = ActionMigrate
	return d, nil
}

// StoredAfter is storedVersions once every object is rewritten: the storage version alone.
func (d Decision) StoredAfter() []string { return []string{d.Storage} }
