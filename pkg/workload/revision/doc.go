// Package revision keeps a workload's history as apps/v1 ControllerRevisions,
// the way the built-in StatefulSet and DaemonSet controllers and OpenKruise's
// workloads do, so that CloneSet, Advanced StatefulSet, Advanced DaemonSet
// and SidecarSet share one implementation instead of four.
//
// A revision's Data is a strategic merge patch that replaces the recorded
// part of the workload ({"spec":{"template":{...,"$patch":"replace"}}}), in
// the same shape OpenKruise stores, so revisions written by either
// controller are read by the other. Its name is "<workload>-<hash>", the
// hash being the built-in controllers' (32-bit FNV-1 of Data and the collision
// count); pods carry the name in their controller-revision-hash label.
//
// History lists a workload's revisions (adopting orphans that match its
// selector and releasing those that no longer do), resolves the current and
// update revisions (re-using an equal old revision on rollback instead of
// creating another), creates with name-collision handling and truncates
// old revisions no pod uses any more.
package revision
