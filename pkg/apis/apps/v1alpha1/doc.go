// Package v1alpha1 holds the v1alpha1 types of the apps.kruise.io API group.
//
// The wire format (kinds, field names, JSON tags and enum values) matches
// OpenKruise's apps.kruise.io/v1alpha1 so that existing manifests apply unchanged.
//
// Every int32 field carries the bounds of an int32 (Minimum/Maximum markers or
// a CEL rule for fields of core types): the API server checks the "int32"
// format of a CRD field only as an int64, and would store a larger number
// that no Go client can decode. One such object makes every list and watch
// of its kind fail, stopping kruise for all objects of that kind.
//
// +k8s:deepcopy-gen=package
// +groupName=apps.kruise.io
package v1alpha1
