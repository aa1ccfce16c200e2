// Package pub holds the types the apps.kruise.io workloads share: the lifecycle hooks and the pod
// states they drive, the in-place update state a pod carries in an annotation, and the update
// priority and scatter strategies. It is not an API version of its own; the v1alpha1 and v1beta1
// kinds embed these types.
//
// The wire format (JSON names, label and annotation keys, condition types, enum values) is
// OpenKruise's apps/pub, so that pods and manifests written for OpenKruise read the same here.
//
// +k8s:deepcopy-gen=package
package pub
