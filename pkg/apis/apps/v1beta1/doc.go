// Package v1beta1 holds the v1beta1 types of the apps.kruise.io API group.
//
// The wire format (kinds, field names, JSON tags and enum values) matches
// OpenKruise's apps.kruise.io/v1beta1 so that existing manifests apply unchanged.
//
// +k8s:deepcopy-gen=package
// +groupName=apps.kruise.io
package v1beta1
