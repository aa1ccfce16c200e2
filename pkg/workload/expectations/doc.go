// Package expectations keeps a controller from acting on a cache that has
// not caught up with its own writes, in the sense of the built-in
// ReplicaSet controller's expectations (client-go/tools/cache).
//
// Scale records, per owner, the pods and PVCs a controller is about to
// create or delete, by name; the owner is not scaled again until the
// informer has shown every one of them, so a slow cache never makes extra
// pods or deletes one too many. ResourceVersions holds back work on an
// object until the cache shows it at least at the resourceVersion the
// controller's last write returned.
//
// An expectation the informer never meets (a lost event) is dropped after a
// timeout instead of blocking its owner for ever; each drop is logged with
// the owner and objects and counted, for the caller to export as a metric.
// Both types are safe for concurrent use and read time from an injected
// clock.
package expectations
