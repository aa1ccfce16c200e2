package sidecarrules

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// NameLabel labels a SidecarSet's ControllerRevisions with its name (OpenKruise's key). A
// SidecarSet is cluster-scoped, so its revisions live in the namespace kruise runs in.
const NameLabel = "kruise.io/sidecarset-name"

// RevisionedSpec is the part of a SidecarSet a ControllerRevision records: what is injected into
// a pod. The data is OpenKruise's shape, {"spec": {<these fields>, "$patch": "replace"}}, every
// key present even when the SidecarSet has none (null), as OpenKruise writes it and tools that
// read the revisions expect. A revision recorded before without the empty keys is still equal
// to one with them (revision.EqualData leaves nulls out), so no new revision is made for it.
type RevisionedSpec struct {
	Volumes          []corev1.Volume                          `json:"volumes"`
	Containers       []appsv1beta1.SidecarContainer           `json:"containers"`
	InitContainers   []appsv1beta1.SidecarContainer           `json:"initContainers"`
	ImagePullSecrets []corev1.LocalObjectReference            `json:"imagePullSecrets"`
	PatchPodMetadata []appsv1beta1.SidecarSetPatchPodMetadata `json:"patchPodMetadata"`
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
