// Package cloneset is the CloneSet controller: it decides how many pods to create, delete and
// update, and in which order, and leaves the mechanics to the shared packages (pkg/workload/inplace for
// in-place updates, pkg/workload/lifecycle for hooks, pkg/workload/revision for history, pkg/workload/expectations so that a
// slow cache never makes extra pods).
//
// The counts come from Calculate (diff.go), a pure function of the strategy resolved to numbers
// (budget.go) and a few facts per pod, so that every rollout rule is tested as a table.
package cloneset
