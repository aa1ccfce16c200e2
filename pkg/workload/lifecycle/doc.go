// Package lifecycle is the lifecycle-hook state machine every kruise workload (CloneSet, Advanced
// StatefulSet, Advanced DaemonSet) runs its pods through. A pod's state is its label
// lifecycle.apps.kruise.io/state:
//
//	PreparingNormal → Normal → (PreparingUpdate) → Updating → (Updated) → Normal
//	any state → (PreparingDelete) → deleted; PreparingDelete → PreparingNormal on scale-up
//
// The workload controller moves the pod, and only through Decide: it says what it wants (nothing,
// create, delete, update in place, update finished, keep) and gets the next state or action.
// A user's hook controller holds the pod by its labels and finalizers (the workload's Lifecycle
// names them): preDelete and inPlaceUpdate hold while ANY of them is on the pod; preNormal holds
// until ALL are on it, and an updated pod stays Updated until all of inPlaceUpdate's are back.
// This is how a user drains traffic, deregisters, or warms up a pod around kruise's own changes.
// A hook with markPodNotReady also takes the pod out of its Services while it waits
// (ReadinessPatch). Decide and the patches are pure; Writer is the thin I/O every workload sends
// them through, and AfterRefresh the step every in-place refresh ends with.
package lifecycle
