package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The local cluster's CRI proxy (hack/tools/criproxy) holds the calls its hang file names without
// answering: a runtime that takes calls and never answers them, for chosen clients only.
var (
	// CRIProxyHangFile is the proxy's --hang-file.
	CRIProxyHangFile = envOr("KRUISE_E2E_CRIPROXY_HANG_FILE", "/var/tmp/kruise-local/criproxy/hang.json")
	// CRIProxyPIDFile is where hack/cluster.sh keeps the proxy's PID.
	CRIProxyPIDFile = envOr("KRUISE_E2E_CRIPROXY_PID_FILE", "/var/tmp/kruise-local/pids/criproxy.pid")
)

// DaemonProcessName is kruise-daemon's process name (/proc/PID/comm), by which the proxy tells its
// calls from the kubelet's, crictl's or the tests' own.
const DaemonProcessName = "kruise-daemon"

// RuntimeHang names the CRI calls the proxy holds: those of Methods (bare CRI method names such as
// "ListContainers"; none means every method) made by the processes named in Clients (none means
// every client).
type RuntimeHang struct {
	Methods []string `json:"methods,omitempty"`
	Clients []string `json:"clients,omitempty"`
	// PodNamespaces narrows the hold to calls about pods of these namespaces (RunPodSandbox and
	// CreateContainer): a test holds the kubelet's work on its own pods only.
	PodNamespaces []string `json:"podNamespaces,omitempty"`
}

// hangApplyTimeout bounds the wait for the proxy to take in a change of its hang file (it reads
// the file every 100 ms).
const hangApplyTimeout = 15 * time.Second

// HangRuntime makes the CRI proxy hold h's calls without answering, and returns once the proxy has
// it in force. The returned release lets the held calls (and later ones) go on; it is also called
// when the test ends. The test is skipped when the running proxy has no hang file (a cluster
// started before the proxy had one).
func HangRuntime(ctx context.Context, t testing.TB, h RuntimeHang) (release func()) {
	t.Helper()
	requireHangSupport(t)
	if len(h.PodNamespaces) > 0 {
		requireHangFeature(t, "podNamespaces")
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatalf("encoding the hang rules: %v", err)
	}
	released := false
	release = func() {
		t.Helper()
		if released {
			return
		}
		released = true
		if err := os.Remove(CRIProxyHangFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("removing %s: %v", CRIProxyHangFile, err)
			return
		}
		waitApplied(context.WithoutCancel(ctx), t, nil)
		t.Logf("the CRI proxy released the held calls")
	}
	t.Cleanup(release)
	tmp := CRIProxyHangFile + ".tmp-e2e"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		t.Fatalf("writing the CRI proxy's hang file: %v", err)
	}
	if err := os.Rename(tmp, CRIProxyHangFile); err != nil {
		t.Fatalf("writing the CRI proxy's hang file: %v", err)
	}
	waitApplied(ctx, t, raw)
	t.Logf("the CRI proxy holds %s", raw)
	return release
}

// waitApplied waits until the proxy's applied copy of its hang file is want (nil: none).
func waitApplied(ctx context.Context, t testing.TB, want []byte) {
	t.Helper()
	applied := CRIProxyHangFile + ".applied"
	desc := "the CRI proxy to hold " + string(want)
	if want == nil {
		desc = "the CRI proxy to release its held calls"
	}
	WaitFor(ctx, t, hangApplyTimeout, desc, func(context.Context) (bool, string, error) {
		got, err := os.ReadFile(applied)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return want == nil, "no " + applied, nil
		case err != nil:
			return false, err.Error(), nil
		}
		return want != nil && bytes.Equal(got, want), applied + ": " + string(got), nil
	})
}

// requireHangSupport skips the test unless the running proxy was started with --hang-file
// CRIProxyHangFile.
func requireHangSupport(t testing.TB) {
	t.Helper()
	pid, err := os.ReadFile(CRIProxyPIDFile)
	if err != nil {
		t.Skipf("no CRI proxy of the local cluster (%v)", err)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "cmdline"))
	if err != nil {
		t.Skipf("the CRI proxy (pid %s) does not run: %v", strings.TrimSpace(string(pid)), err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i, a := range args {
		if a == "--hang-file="+CRIProxyHangFile || (a == "--hang-file" && i+1 < len(args) && args[i+1] == CRIProxyHangFile) {
			return
		}
	}
	t.Skipf("the running CRI proxy was not started with --hang-file %s (%s): rebuild and restart it: "+
		"go build -o _output/bin/ ./hack/tools/criproxy && hack/cluster.sh stop criproxy && hack/cluster.sh start criproxy",
		CRIProxyHangFile, fmt.Sprintf("%q", args))
}

// requireHangFeature fails the test unless the running proxy understands the hang rule field
// name: an older proxy ignores a field it does not know and would hold more than asked.
func requireHangFeature(t testing.TB, name string) {
	t.Helper()
	raw, err := os.ReadFile(CRIProxyHangFile + ".features")
	var f struct {
		RuleFields []string `json:"ruleFields"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &f)
	}
	if err != nil || !slices.Contains(f.RuleFields, name) {
		t.Fatalf("the running CRI proxy does not understand hang rule %q (%s.features: %v %s): rebuild and restart it: "+
			"go build -o _output/bin/ ./hack/tools/criproxy && hack/cluster.sh stop criproxy && hack/cluster.sh start criproxy",
			name, CRIProxyHangFile, err, raw)
	}
}
