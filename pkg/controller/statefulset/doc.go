// Package statefulset is the Advanced StatefulSet controller (apps.kruise.io/v1beta1
// StatefulSet). It first behaves as the built-in StatefulSet controller: stable pod names
// <set>-<ordinal>, per-ordinal PVCs from volumeClaimTemplates, ordered (OrderedReady) or
// parallel scaling, rolling updates from the highest ordinal down to the partition. On top it
// adds kruise's extras: ordinals.start and reserveOrdinals, maxUnavailable rolling updates for
// Parallel sets, in-place updates (pkg/workload/inplace), lifecycle hooks (pkg/workload/lifecycle) and the
// specified-delete label.
//
// Every decision about what to create, delete or update is a pure function of the pods read
// (PlanScale in plan.go, PlanRollout in rollout.go), tested as tables; the controller only
// carries the decisions out, with expectations (pkg/workload/expectations) so that a slow cache never
// makes a pod twice.
package statefulset
