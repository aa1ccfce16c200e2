package main

import (
	"testing"

	"github.com/nodekruise/kruise/test/unit/deptest"
)

// serverSide are the parts of kruise the plugin must not link: it is a
// client on the user's machine, and the components' code would bring their
// informers, webhooks and runtime clients into every user's binary.
var serverSide = map[string]string{
	"github.com/nodekruise/kruise/pkg/controller": "kruise-controller's code",
	"github.com/nodekruise/kruise/pkg/daemon":     "kruise-daemon's code",
	"github.com/nodekruise/kruise/pkg/webhook":    "the webhook server's code",
	"github.com/nodekruise/kruise/pkg/daemon/cri": "the daemon's container runtime client",
}

// TestPluginLinksNoComponentCode lists the plugin's dependencies and fails
// on any package of the two components.
func TestPluginLinksNoComponentCode(t *testing.T) {
	deptest.Forbid(t, "kubectl-kruise", nil, serverSide)
}
