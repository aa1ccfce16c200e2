package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// activeHangs are the rules of this test process's tests now holding calls. The proxy has one
// hang file: each change writes all of them as its anyOf list, so that tests in parallel add and
// remove their own rule without replacing another's. The lock is held from a write until the
// proxy has applied it.
var activeHangs struct {
	sync.Mutex
	next  int
	rules map[int]RuntimeHang
}

// HangRuntime makes the CRI proxy hold h's calls without answering, and returns once the proxy has
// it in force. The returned release lets the held calls (and later ones) go on, those other tests
// hold excepted; it is also called when the test ends. The test is skipped when the running proxy
// has no hang file (a cluster started before the proxy had one).
func HangRuntime(ctx context.Context, t testing.TB, h RuntimeHang) (release func()) {
	t.Helper()
	requireHangSupport(t)
	requireHangFeature(t, "anyOf")
	if len(h.PodNamespaces) > 0 {
		requireHangFeature(t, "podNamespaces")
	}
	activeHangs.Lock()
	id := activeHangs.next
	activeHangs.next++
	activeHangs.Unlock()
	released := false
	release = func() {
		t.Helper()
		if released {
			return
		}
		released = true
		setActiveHang(context.WithoutCancel(ctx), t, id, nil)
		t.Logf("the CRI proxy released the held calls of this test")
	}
	// Registered first: a rule whose wait fails is still taken out when the test ends.
	t.Cleanup(release)
	raw := setActiveHang(ctx, t, id, &h)
	t.Logf("the CRI proxy holds %s", raw)
	return release
}

// setActiveHang sets (nil: removes) the rule of key id in activeHangs, writes the hang file and
// waits for the proxy to apply it. It returns what it wrote.
func setActiveHang(ctx context.Context, t testing.TB, id int, h *RuntimeHang) []byte {
	t.Helper()
	activeHangs.Lock()
	// Deferred: a failed wait ends the test (runtime.Goexit) and must not keep the other tests out.
	defer activeHangs.Unlock()
	if activeHangs.rules == nil {
		activeHangs.rules = map[int]RuntimeHang{}
	}
	if h == nil {
		delete(activeHangs.rules, id)
	} else {
		activeHangs.rules[id] = *h
	}
	raw := writeActiveHangs(t)
	waitApplied(ctx, t, raw)
	return raw
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

// writeActiveHangs writes activeHangs as the proxy's hang file (none: no file) and returns what
// it wrote. The caller holds activeHangs' lock.
func writeActiveHangs(t testing.TB) []byte {
	t.Helper()
	if len(activeHangs.rules) == 0 {
		if err := os.Remove(CRIProxyHangFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("removing %s: %v", CRIProxyHangFile, err)
		}
		return nil
	}
	ids := slices.Sorted(maps.Keys(activeHangs.rules))
	file := struct {
		AnyOf []RuntimeHang `json:"anyOf"`
	}{}
	for _, id := range ids {
		file.AnyOf = append(file.AnyOf, activeHangs.rules[id])
	}
	raw, err := json.Marshal(file)
	if err != nil {
		t.Fatalf("encoding the hang rules: %v", err)
	}
	tmp := CRIProxyHangFile + ".tmp-e2e"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		t.Fatalf("writing the CRI proxy's hang file: %v", err)
	}
	if err := os.Rename(tmp, CRIProxyHangFile); err != nil {
		t.Fatalf("writing the CRI proxy's hang file: %v", err)
	}
	return raw
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
