// Package v1alpha1 holds the v1alpha1 types of the policy.kruise.io API group: the
// PodUnavailableBudget, and the keys of the labels and annotations the availability policies read.
//
// The wire format (kind, field names, JSON tags, annotation keys and operation names) is
// OpenKruise's policy.kruise.io/v1alpha1, so that budgets written for OpenKruise apply unchanged.
// kruise's extensions are annotations, never fields, so that a budget written here still applies
// to OpenKruise.
//
// +k8s:deepcopy-gen=package
// +groupName=policy.kruise.io
package v1alpha1
