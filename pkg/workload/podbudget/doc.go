// Package podbudget is the arithmetic of PodUnavailableBudgets (policy.kruise.io/v1alpha1) and
// the one place that charges one: which operations a budget guards, which pods count as
// available, how many must stay so, which budget covers a pod, the status the controller writes
// (computed from the pods it sees), and the Admitter every caller (the pod webhook, the
// workloads before an in-place update) asks before disrupting a pod.
//
// The functions are pure but for Admitter and the small interfaces the callers implement to read
// workloads (Owners, Replicas), so the numbers are table-tested without a cluster.
package podbudget
