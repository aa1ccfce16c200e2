// Package daemonset is the Advanced DaemonSet controller (apps.kruise.io/v1beta1 DaemonSet). It
// runs one pod on every node the built-in DaemonSet controller would run one on (eligibility.go:
// nodeSelector, required node affinity, taints against the template's tolerations plus the
// tolerations every daemon pod gets), and adds OpenKruise's extras: partition, an update node
// selector, pause, in-place update and a preDelete hook.
//
// The decisions (which nodes need a pod, which pods go, which nodes are updated next) are pure
// functions of per-node facts (nodes.go, rolling.go), tested as tables; the mechanics are the
// shared packages': pkg/workload/revision for history, pkg/workload/expectations so that a slow cache never makes a
// second pod on a node, pkg/workload/inplace and pkg/workload/lifecycle for in-place updates and hooks.
package daemonset
