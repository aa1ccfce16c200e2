package daemonlease

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNameAndNode(t *testing.T) {
	for _, node := range []string{"n1", "worker-0.example.com", "kruise-daemon-x"} {
		got, ok := Node(Name(node))
		if !ok || got != node {
			t.Errorf("Node(Name(%q)) = %q, %v", node, got, ok)
		}
	}
	if got := Name("n1"); got != "kruise-daemon-n1" {
		t.Errorf("Name(n1) = %q, want kruise-daemon-n1 (the name deployed Leases and the admission policy use)", got)
	}
	for _, name := range []string{"", "kruise-daemon-", "kruise-controller", "kube-node-lease-n1", "n1"} {
		if node, ok := Node(name); ok {
			t.Errorf("Node(%q) = %q, true; want not a daemon Lease", name, node)
		}
	}
}

// A live daemon renews several times within Duration, and Duration is a
// whole number of seconds (it is written as leaseDurationSeconds).
func TestTiming(t *testing.T) {
	if Duration < 3*RenewInterval {
		t.Errorf("Duration %v leaves room for fewer than 3 renewals every %v", Duration, RenewInterval)
	}
	if Duration%time.Second != 0 {
		t.Errorf("Duration %v is not whole seconds", Duration)
	}
}

// The admission policy keeps each daemon to its own node's Lease by this
// package's name scheme, written out in CEL: the two must not drift apart.
func TestAdmissionPolicyUsesTheNameScheme(t *testing.T) {
	for _, path := range []string{
		"../../../deploy/base/admission-policy.yaml",
		"../../../deploy/charts/kruise/templates/admission-policy.yaml",
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading the admission policy: %v", err)
		}
		policy := string(b)
		for _, want := range []string{
			"startsWith('" + Prefix + "')",
			"substring(" + strconv.Itoa(len(Prefix)) + ")",
		} {
			if !strings.Contains(policy, want) {
				t.Errorf("%s does not contain %s", path, want)
			}
		}
	}
}
