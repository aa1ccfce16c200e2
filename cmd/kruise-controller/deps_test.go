package main

import (
	"testing"

	"github.com/nodekruise/kruise/test/unit/deptest"
)

// unwanted are packages kruise-controller must not link. The controller
// decides and writes API objects; the node daemons talk to the container
// runtime. What both sides share (the heartbeat Lease's name and timing,
// pkg/contract/daemonlease) lives outside the daemon's packages.
var unwanted = map[string]string{
	"github.com/nodekruise/kruise/pkg/daemon":     "kruise-daemon's code; share through a package both import (e.g. pkg/contract/daemonlease)",
	"github.com/nodekruise/kruise/pkg/daemon/cri": "the CRI boundary is the daemon's",
	"k8s.io/cri-api":        "CRI protocol: only the daemon talks to the container runtime",
	"k8s.io/cri-client":     "CRI client: only the daemon talks to the container runtime",
	"github.com/containerd": "containerd client libraries: only the daemon talks to the container runtime",
}

// TestNoUnwantedDependencies lists kruise-controller's dependencies and
// fails on any of unwanted (the package itself or one below it).
func TestNoUnwantedDependencies(t *testing.T) {
	deptest.Forbid(t, "kruise-controller", nil, unwanted)
}
