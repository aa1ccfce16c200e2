package ejobaccess

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// RequesterAnnotation holds, as JSON, the user who last created or changed the job's spec (or
// this annotation). Only the mutating webhook writes it: whatever a user writes is overwritten.
const RequesterAnnotation = "apps.kruise.io/ephemeraljob-requester"

// Requester is the user the API server authenticated for the request.
type Requester struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// FromUserInfo is the requester of an admission request.
func FromUserInfo(u authenticationv1.UserInfo) Requester {
	r := Requester{Username: u.Username, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	if len(u.Extra) > 0 {
		r.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			r.Extra[k] = append([]string(nil), v...)
		}
	}
	return r
}

// Encode is the annotation's value.
func (r Requester) Encode() string {
	raw, _ := json.Marshal(r) // strings, slices and maps of strings: never fails
	return string(raw)
}

// ErrNoRequester: the job carries no requester annotation (created with the webhooks off).
var ErrNoRequester = errors.New("no " + RequesterAnnotation + " annotation: the EphemeralJob was not admitted by kruise's webhooks")

// FromAnnotations reads the requester of a job's annotations.
func FromAnnotations(annotations map[string]string) (Requester, error) {
	raw, ok := annotations[RequesterAnnotation]
	if !ok {
		return Requester{}, ErrNoRequester
	}
	var r Requester
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Requester{}, fmt.Errorf("reading annotation %s: %w", RequesterAnnotation, err)
	}
	if r.Username == "" {
		return Requester{}, fmt.Errorf("annotation %s names no user", RequesterAnnotation)
	}
	return r, nil
}

// Check is one permission a requester needs on the pods.
type Check struct {
	Verb, Resource, Subresource string
}

// Checks are what a requester must be allowed, on a pod or across the namespace, for a job to
// add containers to it: what kubectl exec and kubectl debug need.
var Checks = []Check{
	{Verb: "create", Resource: "pods", Subresource: "exec"},
	{Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"},
}

// String is how a refusal names the permission ("create pods/exec").
func (c Check) String() string { return c.Verb + " " + c.Resource + "/" + c.Subresource }

// Review is the SubjectAccessReview asking whether r may do c on the pod name in namespace (on
// every pod of it when name is empty).
func (r Requester) Review(c Check, namespace, name string) *authorizationv1.SubjectAccessReview {
	extra := make(map[string]authorizationv1.ExtraValue, len(r.Extra))
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra[k] = append(authorizationv1.ExtraValue(nil), r.Extra[k]...)
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: r.Username, UID: r.UID, Groups: r.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: c.Verb, Resource: c.Resource, Subresource: c.Subresource, Name: name,
		},
	}}
}
