// Package podorder is the ordering the workload controllers share when they
// must pick pods: which to delete first when a workload scales in, and in
// which order to update its pods. It is pure: it reads pods (and, for
// topology ranks, nodes) and returns a new slice; it never changes a pod
// or the slice it was given.
//
// Deletion (ForDeletion, DeletionOrder) puts first the pods whose loss
// hurts least, criterion after criterion:
//
//  1. not scheduled to a node;
//  2. phase Pending, then Unknown, then Running (any other phase counts
//     as Pending);
//  3. not available, when the caller says what available is;
//  4. not ready (the PodReady condition);
//  5. lower controller.kubernetes.io/pod-deletion-cost (a value that is
//     not a canonical int32 counts as 0, as the Kubernetes controllers
//     read it);
//  6. higher rank: more of the given pods in the same topology domain
//     (see rank.go), then on the same node;
//  7. ready for less time (the PodReady condition's lastTransitionTime);
//  8. more container restarts, then more restartable-init (sidecar)
//     restarts;
//  9. newer (creationTimestamp);
//  10. name, then namespace, so equal pods never come out in input order.
//
// Update (ForUpdate) starts from the least active pods first (criteria 1,
// 2, 4, 7, 8, 9 and 10 above), then applies the workload's
// priorityStrategy (priority.go) and scatterStrategy (scatter.go), each a
// stable reordering of the one before, and finally moves pods in lifecycle
// state PreparingUpdate to the front: their update has already begun.
package podorder
