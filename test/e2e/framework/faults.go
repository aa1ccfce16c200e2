package framework

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// RegistryLog is the loopback registry's log on the local cluster (one line per request, with the
// injected faults of the flaky/, drop/, broken/ and stall/ prefixes noted in its auth field).
var RegistryLog = envOr("KRUISE_E2E_REGISTRY_LOG", "/var/tmp/kruise-local/logs/registry.log")

// RegistryLogLines returns the lines of the registry's log about blobs of repo (the repository
// path without the registry host, e.g. "flaky/2/e2e-abc") that contain note (e.g.
// "injected 503"). It returns nil when the log is not there (another kind of cluster).
func RegistryLogLines(t testing.TB, repo, note string) []string {
	t.Helper()
	raw, err := os.ReadFile(RegistryLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the registry's log: %v", err)
	}
	var out []string
	blobs := "/v2/" + repo + "/blobs/"
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, blobs) && strings.Contains(line, note) {
			out = append(out, line)
		}
	}
	return out
}
