// Package spread holds the rules of WorkloadSpread that its pod webhook and its controller share:
// which workload a pod belongs to, how big each subset may grow, which subset a new pod goes to,
// what is injected into it, the subsets' counts and the pods' deletion costs. Everything here is
// pure: the callers read and write the API.
package spread
