// Package daemonlease is what kruise-daemon and kruise-controller agree on
// about the daemon's heartbeat: each daemon keeps one coordination.k8s.io
// Lease, named after its node, in the namespace of both components, and
// renews it every RenewInterval; the controller counts a node's daemon as
// live for Duration after it last saw that Lease renewed. The daemon keeps
// the Lease (pkg/daemon/heartbeat), the controller reads it
// (pkg/controller/crr).
//
// The package imports only the standard library, so that the controller
// knows these facts without linking any of the daemon's code
// (cmd/kruise-controller/deps_test.go). The admission policy that lets a
// daemon write only its own node's Lease (deploy/, kruise-daemon-node-scope)
// spells the same name scheme in CEL.
package daemonlease

import (
	"strings"
	"time"
)

const (
	// Prefix starts the name of every daemon heartbeat Lease:
	// kruise-daemon-<node>.
	Prefix = "kruise-daemon-"
	// RenewInterval is how often a daemon renews its Lease.
	RenewInterval = 10 * time.Second
	// Duration is how long after its last renewal a daemon counts as live:
	// the Lease's leaseDurationSeconds, and the controller's judgement.
	// Several renewals fit in it, so one failed renewal does not make a
	// live daemon look gone.
	Duration = 40 * time.Second
)

// Name is the name of the heartbeat Lease of node's daemon.
func Name(node string) string { return Prefix + node }

// Node is the node whose daemon keeps the Lease named name, and whether
// name is a daemon heartbeat Lease's name at all.
func Node(name string) (string, bool) {
	node, ok := strings.CutPrefix(name, Prefix)
	if !ok || node == "" {
		return "", false
	}
	return node, true
}
