// Package features holds kruise's feature gates, with OpenKruise's names so
// that an operator's --feature-gates string (Helm value featureGates) keeps
// its meaning, and the --feature-gates flag both binaries share.
//
// Gates OpenKruise defines but kruise does not implement are accepted and
// ignored with a warning (see unimplemented.go); any other unknown name is
// an error.
package features

import (
	"k8s.io/component-base/featuregate"
)

const (
	// KruiseDaemon says kruise-daemon is deployed on the nodes. When false,
	// kruise-controller does not run the controllers whose work a daemon
	// carries out (ContainerRecreateRequest lifecycle, NodeImage,
	// ImagePullJob, ImageListPullJob and their pull secrets).
	// Beta, default true (as in OpenKruise).
	KruiseDaemon featuregate.Feature = "KruiseDaemon"

	// SidecarTerminator turns on the Job sidecar terminator controller.
	// Beta, default true. OpenKruise defaults it to false (Alpha): an
	// OpenKruise install that never set it gets the terminator here.
	SidecarTerminator featuregate.Feature = "SidecarTerminator"

	// ImagePullJobGate turns on image pre-pulling: the ImagePullJob,
	// ImageListPullJob and pull-secret controllers (they need KruiseDaemon
	// too). Beta, default true. OpenKruise defaults it to false (Alpha).
	ImagePullJobGate featuregate.Feature = "ImagePullJobGate"

	// EnableExternalCerts says the webhook certificates are someone else's
	// (cert-manager and its cainjector): kruise-controller reads ca.crt,
	// tls.crt and tls.key from Secret kruise-webhook-certs and verifies the
	// caBundles, writing nothing. Off, it keeps its own CA and writes the
	// caBundles. Only read with --webhook-enabled. Alpha, default false (as
	// in OpenKruise).
	EnableExternalCerts featuregate.Feature = "EnableExternalCerts"

	// InPlaceUpdateEnvFromMetadata turns on kruise-daemon's env-from-metadata
	// restarter: during an in-place update that changes labels or
	// annotations containers read as env, it restarts those containers
	// once so that they see the new values. Beta, default true (as in
	// OpenKruise).
	InPlaceUpdateEnvFromMetadata featuregate.Feature = "InPlaceUpdateEnvFromMetadata"

	// CloneSetEventHandlerOptimization makes the CloneSet controller skip pod
	// updates that change nothing it reads (probe timestamps, IPs, container
	// start times), so status noise does not cost reconciles. Alpha, default
	// false (as in OpenKruise).
	CloneSetEventHandlerOptimization featuregate.Feature = "CloneSetEventHandlerOptimization"

	// PreDownloadImageForInPlaceUpdate makes the CloneSet and Advanced
	// StatefulSet controllers pull an in-place update's new images ahead,
	// with ImagePullJobs, on the nodes of the pods still to be updated (it
	// needs ImagePullJobGate and KruiseDaemon too). Alpha, default false (as
	// in OpenKruise).
	PreDownloadImageForInPlaceUpdate featuregate.Feature = "PreDownloadImageForInPlaceUpdate"

	// PreDownloadImageForDaemonSetUpdate makes the Advanced DaemonSet controller pull an
	// in-place update's new images ahead, with ImagePullJobs, on the nodes of the pods still to
	// be updated (it needs ImagePullJobGate and KruiseDaemon too). Alpha, default false (as in
	// OpenKruise).
	PreDownloadImageForDaemonSetUpdate featuregate.Feature = "PreDownloadImageForDaemonSetUpdate"

	// StatefulSetAutoDeletePVC makes the Advanced StatefulSet controller act on
	// persistentVolumeClaimRetentionPolicy (owner references on the PVCs, so they go with the
	// set or the scaled-in pod). Off, PVCs are created without owners and left as they are.
	// Beta, default true (as in OpenKruise).
	StatefulSetAutoDeletePVC featuregate.Feature = "StatefulSetAutoDeletePVC"

	// StatefulSetStartOrdinal makes the Advanced StatefulSet controller number pods from
	// spec.ordinals.start. Off, ordinals.start is read as 0. Alpha, default false, as in
	// OpenKruise: a set that carries ordinals.start and ran under OpenKruise has its pods from 0,
	// and a different default would renumber them when the set moves to kruise.
	StatefulSetStartOrdinal featuregate.Feature = "StatefulSetStartOrdinal"

	// PodIndexLabel makes the Advanced StatefulSet controller label each new pod with its
	// ordinal (apps.kubernetes.io/pod-index), as the built-in StatefulSet does. Beta, default
	// true (as in OpenKruise).
	PodIndexLabel featuregate.Feature = "PodIndexLabel"

	// StatefulSetAutoResizePVCGate makes the Advanced StatefulSet controller act on
	// volumeClaimUpdateStrategy: a storage request grown in volumeClaimTemplates expands the
	// existing claims (where their StorageClass allows it), and status.volumeClaims says how many
	// pods' claims match the templates. Alpha, default false (as in OpenKruise).
	StatefulSetAutoResizePVCGate featuregate.Feature = "StatefulSetAutoResizePVCGate"

	// RecreatePodWhenChangeVCTInCloneSetGate makes a change of a CloneSet's volumeClaimTemplates
	// a new revision that recreates the pods (and their claims), unless the update is
	// InPlaceOnly. Alpha, default false (as in OpenKruise).
	RecreatePodWhenChangeVCTInCloneSetGate featuregate.Feature = "RecreatePodWhenChangeVCTInCloneSetGate"

	// CloneSetShortHash makes the CloneSet controller write only the hash part of a revision
	// name in a new pod's controller-revision-hash label (both forms are always read). Alpha,
	// default false (as in OpenKruise).
	CloneSetShortHash featuregate.Feature = "CloneSetShortHash"

	// CloneSetPartitionRollback makes a CloneSet whose partition grows bring updated pods back
	// to the current revision until partition pods are old again. Alpha, default false (as in
	// OpenKruise).
	CloneSetPartitionRollback featuregate.Feature = "CloneSetPartitionRollback"

	// PreparingUpdateAsUpdate makes the CloneSet controller's scale pass count a pod held in the
	// PreparingUpdate lifecycle state (waiting on its inPlaceUpdate hook) as updated: scale-in
	// deletes old pods before it, scale-out creates no old-revision pod in its place. Alpha,
	// default false (as in OpenKruise).
	PreparingUpdateAsUpdate featuregate.Feature = "PreparingUpdateAsUpdate"

	// InPlaceWorkloadVerticalScaling lets an in-place update change containers' cpu and memory
	// through the pods/resize subresource (CloneSet, Advanced StatefulSet, Advanced DaemonSet,
	// SidecarSet). Off, a change of resources is not in-place-able and the pod is recreated (as
	// OpenKruise does with the gate off). Beta, default true: kruise has resized in place since
	// its CloneSet's first release, and the end state is the one the manifest asks for either
	// way. OpenKruise has it Alpha, default false.
	InPlaceWorkloadVerticalScaling featuregate.Feature = "InPlaceWorkloadVerticalScaling"

	// EnableSortSidecarContainerByName makes the SidecarSet injection order the sidecar
	// containers it injects by name, so that the order does not depend on the order the
	// SidecarSets were listed. Alpha, default false (as in OpenKruise).
	EnableSortSidecarContainerByName featuregate.Feature = "EnableSortSidecarContainerByName"

	// SidecarSetPatchPodMetadataDefaultsAllowed lets a SidecarSet's patchPodMetadata patch any pod
	// annotation when the allow-list (ConfigMap kruise-configuration, key
	// SidecarSet_PatchPodMetadata_WhiteList) has no rule for it; off, such a SidecarSet is refused
	// at admission. Alpha, default false (as in OpenKruise).
	SidecarSetPatchPodMetadataDefaultsAllowed featuregate.Feature = "SidecarSetPatchPodMetadataDefaultsAllowed"

	// PodUnavailableBudgetDeleteGate makes PodUnavailableBudgets guard pod
	// deletion and eviction. Beta, default true (as in OpenKruise).
	PodUnavailableBudgetDeleteGate featuregate.Feature = "PodUnavailableBudgetDeleteGate"

	// PodUnavailableBudgetUpdateGate makes PodUnavailableBudgets guard pod
	// updates that disrupt a pod (an in-place update, a resize): the
	// workloads ask the budget before such a step and the pod webhook refuses
	// other writers over budget. Alpha, default false (as in OpenKruise).
	PodUnavailableBudgetUpdateGate featuregate.Feature = "PodUnavailableBudgetUpdateGate"

	// ResourcesDeletionProtection turns on the policy.kruise.io/delete-protection
	// label. Beta, default false (as in OpenKruise).
	ResourcesDeletionProtection featuregate.Feature = "ResourcesDeletionProtection"

	// DeletionProtectionForCRDCascadingGate lets delete-protection Cascading
	// on a CustomResourceDefinition look for its objects; off, such a CRD
	// cannot be deleted at all while labelled (as in OpenKruise). It needs
	// ResourcesDeletionProtection. Alpha, default false (as in OpenKruise).
	DeletionProtectionForCRDCascadingGate featuregate.Feature = "DeletionProtectionForCRDCascadingGate"

	// WorkloadSpread spreads a workload's pods over subsets of nodes: the
	// pod webhook places each new pod of a targeted workload in a subset.
	// Beta, default true (as in OpenKruise).
	WorkloadSpread featuregate.Feature = "WorkloadSpread"

	// PodProbeMarkerGate turns on PodProbeMarker and NodePodProbe: kruise-controller lists each
	// node's probes in its NodePodProbe and marks pods with the results, kruise-daemon runs the
	// probes. It needs KruiseDaemon. Beta, default true (as in OpenKruise).
	PodProbeMarkerGate featuregate.Feature = "PodProbeMarkerGate"

	// EnablePodProbeMarkerOnServerless makes PodProbeMarkers reach pods on serverless nodes
	// (label type=virtual-kubelet): the probes are written on the pod for the virtual node to
	// run, and the marks follow the conditions it reports. It needs PodProbeMarkerGate and the
	// webhooks. Alpha, default false (as in OpenKruise).
	EnablePodProbeMarkerOnServerless featuregate.Feature = "EnablePodProbeMarkerOnServerless"

	// EnhancedLivenessProbe hands the liveness probes of pods annotated
	// apps.kruise.io/using-enhanced-liveness: "true" from the kubelet to kruise-daemon, and
	// restarts failed containers through ContainerRecreateRequests within a budget per
	// workload. It needs KruiseDaemon and the webhooks. Alpha, default false (as in OpenKruise).
	EnhancedLivenessProbe featuregate.Feature = "EnhancedLivenessProbe"

	// ResourceDistributionGate turns on ResourceDistribution: kruise-controller copies one Secret
	// or ConfigMap into the namespaces a ResourceDistribution chooses and keeps the copies in
	// sync, and its webhook admits ResourceDistributions. Alpha, default false (as in OpenKruise
	// v1.9.0).
	ResourceDistributionGate featuregate.Feature = "ResourceDistributionGate"
)

// specs are the gates kruise implements.
var specs = map[featuregate.Feature]featuregate.FeatureSpec{
	KruiseDaemon:      {Default: true, PreRelease: featuregate.Beta},
	SidecarTerminator: {Default: true, PreRelease: featuregate.Beta},
	ImagePullJobGate:  {Default: true, PreRelease: featuregate.Beta},
	// Alpha like OpenKruise's, so AllAlpha=true turns it on there and here.
	EnableExternalCerts:                       {Default: false, PreRelease: featuregate.Alpha},
	InPlaceUpdateEnvFromMetadata:              {Default: true, PreRelease: featuregate.Beta},
	CloneSetEventHandlerOptimization:          {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForInPlaceUpdate:          {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForDaemonSetUpdate:        {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetAutoDeletePVC:                  {Default: true, PreRelease: featuregate.Beta},
	StatefulSetStartOrdinal:                   {Default: false, PreRelease: featuregate.Alpha},
	PodIndexLabel:                             {Default: true, PreRelease: featuregate.Beta},
	StatefulSetAutoResizePVCGate:              {Default: false, PreRelease: featuregate.Alpha},
	RecreatePodWhenChangeVCTInCloneSetGate:    {Default: false, PreRelease: featuregate.Alpha},
	CloneSetShortHash:                         {Default: false, PreRelease: featuregate.Alpha},
	CloneSetPartitionRollback:                 {Default: false, PreRelease: featuregate.Alpha},
	PreparingUpdateAsUpdate:                   {Default: false, PreRelease: featuregate.Alpha},
	InPlaceWorkloadVerticalScaling:            {Default: true, PreRelease: featuregate.Beta},
	EnableSortSidecarContainerByName:          {Default: false, PreRelease: featuregate.Alpha},
	SidecarSetPatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
	PodUnavailableBudgetDeleteGate:            {Default: true, PreRelease: featuregate.Beta},
	PodUnavailableBudgetUpdateGate:            {Default: false, PreRelease: featuregate.Alpha},
	ResourcesDeletionProtection:               {Default: false, PreRelease: featuregate.Beta},
	DeletionProtectionForCRDCascadingGate:     {Default: false, PreRelease: featuregate.Alpha},
	WorkloadSpread:                            {Default: true, PreRelease: featuregate.Beta},
	PodProbeMarkerGate:                        {Default: true, PreRelease: featuregate.Beta},
	EnablePodProbeMarkerOnServerless:          {Default: false, PreRelease: featuregate.Alpha},
	EnhancedLivenessProbe:                     {Default: false, PreRelease: featuregate.Alpha},
	ResourceDistributionGate:                  {Default: false, PreRelease: featuregate.Alpha},
}

// Implemented lists the gates kruise implements, in no particular order.
func Implemented() []featuregate.Feature {
	out := make([]featuregate.Feature, 0, len(specs))
	for name := range specs {
		out = append(out, name)
	}
	return out
}

// New returns a fresh gate that knows kruise's gates, all at their
// defaults; tests use it instead of the process-wide DefaultMutableFeatureGate.
func New() featuregate.MutableFeatureGate {
	g := featuregate.NewFeatureGate()
	if err := g.Add(specs); err != nil {
		// Only a duplicate name with a different spec can fail, which is a
		// programming error in this file.
		panic(err)
	}
	return g
}

// DefaultMutableFeatureGate is the process-wide gate the --feature-gates
// flag of both binaries sets.
var DefaultMutableFeatureGate = New()

// DefaultFeatureGate is the read-only view of DefaultMutableFeatureGate.
var DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate
