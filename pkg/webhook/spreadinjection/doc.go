// Package spreadinjection is WorkloadSpread's pod admission: at a pod's create it assigns the pod
// to a subset of the WorkloadSpread that targets its workload, records it in the spread's status
// (the ledger: creatingPods, missingReplicas, written on the resourceVersion read, retried on
// conflict) and injects the subset's affinity, tolerations and patch (pkg/workload/spread has the
// rules); at a pod's delete or eviction it records the pod in deletingPods so that its
// replacement finds its subset's place free. The delete side never refuses anything.
//
// The API server sends only pods whose controller some WorkloadSpread targets (the
// matchConditions pkg/controller/spreadscope writes), never those of kube-system or kruise's
// namespace (podscope): any other pod is never delayed, even while kruise is down.
package spreadinjection
