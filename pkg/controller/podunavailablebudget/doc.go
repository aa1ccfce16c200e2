// Package podunavailablebudget is the PodUnavailableBudget controller: it keeps each budget's
// status (what the Admitter of pkg/workload/podbudget charges) in step with the pods it covers
// and their workloads' replicas, prunes the charges that are spent or expired, and annotates the
// covered pods with kruise.io/related-pub. The arithmetic is podbudget's; this package is the
// watches, the reconcile and the writes.
package podunavailablebudget
