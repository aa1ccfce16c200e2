// Package uniteddeployment runs a UnitedDeployment: one workload (CloneSet, Advanced
// StatefulSet, StatefulSet or Deployment) per subset of its topology, each made from the one
// template with the subset's node selector term, tolerations and patch, and given its share of
// spec.replicas and its partition. The decisions (allocation, adaptive scheduling, rendering,
// the plan of writes, status) are pure functions of what the caches show; sync.go only reads
// and writes. Semantics follow OpenKruise v1.9.0.
package uniteddeployment
