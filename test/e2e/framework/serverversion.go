package framework

import (
	"strconv"
	"strings"
	"testing"
)

// ServerMinor is the Kubernetes minor version of the API server under test (30 for v1.30.14),
// read through discovery.
func (f *Framework) ServerMinor(t testing.TB) int {
	t.Helper()
	v, err := f.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("reading the API server's version: %v", err)
	}
	// Minor may carry a suffix ("30+" on some distributions).
	m, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if err != nil {
		t.Fatalf("the API server's minor version %q (%s) is not a number: %v", v.Minor, v.GitVersion, err)
	}
	return m
}

// ServesResize reports whether the API server serves the pods/resize subresource, through which
// kruise resizes containers in place (Kubernetes 1.33 and later).
func (f *Framework) ServesResize(t testing.TB) bool {
	t.Helper()
	l, err := f.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatalf("discovery of v1: %v", err)
	}
	for _, r := range l.APIResources {
		if r.Name == "pods/resize" {
			return true
		}
	}
	return false
}

// SkipWithoutResize skips t where the API server does not serve pods/resize: cpu and memory
// changes are not applied in place there (docs/operations.md, "Kubernetes versions").
func (f *Framework) SkipWithoutResize(t testing.TB) {
	t.Helper()
	if !f.ServesResize(t) {
		t.Skipf("Kubernetes 1.%d does not serve pods/resize (1.33 and later do): kruise recreates pods for cpu and memory changes instead of resizing them in place",
			f.ServerMinor(t))
	}
}
