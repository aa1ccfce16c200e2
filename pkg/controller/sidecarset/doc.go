// Package sidecarset is the SidecarSet controller. The injection webhook puts a SidecarSet's
// containers into pods at creation; this controller keeps the SidecarSet's history as
// ControllerRevisions, counts the pods it selects in its status and, under its RollingUpdate
// strategy, upgrades in place the sidecars of pods that differ from the SidecarSet only in
// images: the new images of the injected containers and native sidecar init containers (the
// kubelet restarts a running restartable init container whose image changed), the pod's hash
// annotations and the SidecarSet's entry of kruise.io/sidecarset-inplace-update-state, in one
// write. Completion is read as every workload reads it (pkg/workload/inplace: a new container ID).
//
// The pod's readiness is not flipped, unlike a CloneSet's update. maxUnavailable bounds the
// pods the SidecarSet's own upgrades made unavailable (disruption.go), not every matched pod that
// is not Ready: a SidecarSet spans tenants, and one's broken pod must not stall the rollout for
// the others. A pod that differs in more
// than images cannot be upgraded in place: it is left, counted not updated, and reported (an
// Event on the SidecarSet, a log line, a metric). A pod whose own workload is updating it in
// place waits until that update is done, so neither restarts it on top of the other.
//
// With gate PodUnavailableBudgetUpdateGate, a write that restarts a pod's containers (an upgrade,
// a hot upgrade's hand-over) first asks the PodUnavailableBudget (pkg/workload/budgetwait); a pod
// it holds back waits, reported once per reason in an Event (SidecarSet's status has no
// conditions), and the SidecarSet looks again shortly.
//
// Files: controller.go (wiring), handlers.go (events to work), sync.go (one pass), podview.go
// (what a pod is to a SidecarSet), disruption.go (which pods the SidecarSet made unavailable),
// choose.go (which pods to upgrade now), upgrade.go (one pod's write), revisions.go (history),
// status.go (counts), metrics.go.
package sidecarset
