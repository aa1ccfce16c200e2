package sidecarset

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/revision"
)

// NameLabel labels a SidecarSet's ControllerRevisions with its name (OpenKruise's key). A
// SidecarSet is cluster-scoped, so its revisions live in the namespace kruise runs in.
const NameLabel = "kruise.io/sidecarset-name"

// RevisionedSpec is the part of a SidecarSet a ControllerRevision records: what is injected into
// a pod. The data is OpenKruise's shape, {"spec": {<these fields>, "$patch": "replace"}}.
type RevisionedSpec struct {
	Volumes          []corev1.Volume                          `json:"volumes,omitempty"`
	Containers       []appsv1beta1.SidecarContainer           `json:"containers,omitempty"`
	InitContainers   []appsv1beta1.SidecarContainer           `json:"initContainers,omitempty"`
	ImagePullSecrets []corev1.LocalObjectReference            `json:"imagePullSecrets,omitempty"`
	PatchPodMetadata []appsv1beta1.SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// RevisionData is the ControllerRevision data of ss.
func RevisionData(ss *appsv1beta1.SidecarSet) ([]byte, error) {
	return revision.PatchData(RevisionedSpec{
		Volumes:          ss.Spec.Volumes,
		Containers:       ss.Spec.Containers,
		InitContainers:   ss.Spec.InitContainers,
		ImagePullSecrets: ss.Spec.ImagePullSecrets,
		PatchPodMetadata: ss.Spec.PatchPodMetadata,
	}, "spec")
}

// AtRevision is a copy of ss whose injected part is the one data (a ControllerRevision's) recorded:
// what injectionStrategy.revision injects instead of the latest.
func AtRevision(ss *appsv1beta1.SidecarSet, data []byte) (*appsv1beta1.SidecarSet, error) {
	var rs RevisionedSpec
	if err := revision.DecodeData(data, &rs, "spec"); err != nil {
		return nil, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
	}
	out := ss.DeepCopy()
	out.Spec.Volumes = rs.Volumes
	out.Spec.Containers = rs.Containers
	out.Spec.InitContainers = rs.InitContainers
	out.Spec.ImagePullSecrets = rs.ImagePullSecrets
	out.Spec.PatchPodMetadata = rs.PatchPodMetadata
	return out, nil
}
