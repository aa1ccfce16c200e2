// Package workloadspread is the WorkloadSpread controller: it keeps each WorkloadSpread's status
// (the ledger its pod webhook charges at admission) in step with the pods the target workload
// owns, writes their deletion costs so that scale-in follows the spread, adopts pods that were
// never admitted into a subset, and carries out the Adaptive strategy's rescheduling. The rules
// are pkg/workload/spread's; this package is the watches, the reconcile and the writes. It does
// nothing while nothing changes: it is woken only by changes of what it counts, and by the expiry
// of something pending.
package workloadspread
