// Package inplace is the in-place update engine every kruise workload shares (CloneSet, Advanced
// StatefulSet, Advanced DaemonSet, SidecarSet). It knows pods, pod templates and the apps/pub
// wire types, never a workload's API type, so each workload keeps only its counting and ordering.
//
// Policy is pure functions of a pod and a time; the Updater only writes what they decide:
//
//   - Plan compares two templates field by field and returns a Spec (new images, cpu/memory
//     resizes, metadata, containers that read changed metadata as env and must restart) or a
//     *NotInPlaceError naming the first field that needs new pods.
//   - Batches orders a Spec's containers by launch priority (barrier env, else the declared
//     priority), higher first, keeping containers that read one changed key together.
//   - Start, FinishGrace and NextBatch compute one write: the pod with its first (or next) batch
//     and the state annotation in OpenKruise's format, or only the grace record.
//   - Decide reads a pod and says what its update needs now; completion is read from container
//     statuses: a new container ID (recorded before the update) proves a restart even for a
//     retagged image, and reported resources prove a resize.
//   - The InPlaceUpdateReady readiness gate holds the pod out of its Services meanwhile. For an
//     image update it is released to the kubelet once the kubelet syncs the new spec (reason
//     ContainersRestarting), so that Ready follows the new containers' probes without one more
//     kubelet sync, and taken back should the pod turn Ready on an old container.
//   - An annotation of the engine's that does not decode (anyone who may patch the pod can write
//     one) is an *AnnotationError, and Unreadable finds it up front: a workload leaves such a pod
//     as it is and reports it (ReportUnreadable) instead of failing its pass for every pod.
//
// With WithBudget, the Updater first asks the PodUnavailableBudget (budgetwait.Check) with the
// update's Operation (UPDATE, or RESIZE for cpu and memory applied live) and, refused, writes
// nothing (OutcomeBudgetWait).
//
// The Updater sets the condition False first, then resizes through pods/resize and updates the
// pod, re-reading the pod and deciding again when a write conflicts. A workload calls
// RouteUpdate (Plan under its podUpdatePolicy) to choose in place, recreate or refuse,
// Updater.Update to start, and Updater.Refresh on every sync.
package inplace
