// Package resourcedistribution copies a ResourceDistribution's Secret or ConfigMap into the
// namespaces its targets choose and keeps the copies in sync (OpenKruise v1.9.0's semantics,
// gate ResourceDistributionGate).
//
// The decision is pure (Decide, in decide.go): from the distribution, the namespaces and the
// copies it knows, it says which namespaces get a create, an update or a delete, which are in
// conflict or missing, and what the status is. The controller around it only reads caches and
// carries the actions out.
//
// What it watches, and why: copies are Secrets, and a cluster-wide cache of every Secret (and
// ConfigMap) holds every credential of the cluster in kruise-controller's memory, at a cost that
// grows with what users store, not with what kruise manages. So the controller stamps its copies
// with the label CopyLabel and watches only Secrets and ConfigMaps that carry it (two filtered
// informers of its own, full objects: their data is what it compares). A same-named object that
// is not a copy is invisible to these caches; it is read by name only when a create finds the
// name taken (it is then either ours, made by OpenKruise or before the label, and adopted, or
// someone else's, a ConflictOccurred left alone). Copies that OpenKruise made before a migration
// carry its controller reference but not the label: the first pass over each distribution in a
// process lists the resource's name across namespaces once (a field selector on metadata.name)
// and adopts those, so that their namespaces leaving the targets still lose them.
//
// Cost: a pass is O(namespaces) in memory and writes at most workers.Burst copies, Parallel at a
// time within the client's rate limit; copies it created count as made until the cache shows
// them, so the passes the creations' own events start do not create or read them again. Nothing
// changing (no spec, namespace or copy event) means no pass at all; only a namespace in conflict
// is looked at again, every ConflictRecheck, since the object in the way sends no event.
package resourcedistribution
