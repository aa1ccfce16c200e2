package main

import (
	"os/exec"
	"strings"
	"testing"
)

// serverSide are the parts of kruise the plugin must not link: it is a
// client on the user's machine, and the components' code would bring their
// informers, webhooks and runtime clients into every user's binary.
var serverSide = []string{
	"github.com/nodekruise/kruise/pkg/controller",
	"github.com/nodekruise/kruise/pkg/daemon",
	"github.com/nodekruise/kruise/pkg/webhook",
	"github.com/nodekruise/kruise/pkg/cri",
}

// TestPluginLinksNoComponentCode lists the plugin's dependencies and fails
// on any package of the two components.
func TestPluginLinksNoComponentCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps printed %d packages; expected the plugin's whole graph", len(deps))
	}
	for _, dep := range deps {
		for _, prefix := range serverSide {
			if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
				t.Errorf("kubectl-kruise links %s", dep)
			}
		}
	}
}
