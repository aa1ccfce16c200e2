//go:build linux

package credentials

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// hangingFamilyPlugin is a plugin that starts a child ignoring SIGTERM,
// records both PIDs and hangs waiting for the child; the child keeps the
// plugin's stdout and stderr open.
const hangingFamilyPlugin = `#!/bin/sh
sh -c 'trap "" TERM; echo $$ > "$1.child"; exec sleep 3600' child "$1" &
echo $$ > "$1.plugin"
wait
`

// procState is the state letter of /proc/PID/stat ("" when there is no
// such process).
func procState(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	rest := string(raw[bytes.LastIndexByte(raw, ')')+1:])
	if f := strings.Fields(rest); len(f) > 0 {
		return f[0]
	}
	return ""
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	return pid
}

// A plugin that times out is killed with everything it started: the child
// that ignores SIGTERM dies too, the call returns within the timeout plus a
// small margin (not after WaitDelay, which the child's open pipes would
// cost), the plugin itself is reaped, and the child is left only as a
// zombie for the PID namespace's init (the pod's pause container) to reap.
// The test process stands in for that init: it makes itself the subreaper
// of orphans, checks the child is dead, reaps it and finds /proc empty.
func TestPluginTimeoutKillsItsProcessGroup(t *testing.T) {
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })

	dir := t.TempDir()
	script := filepath.Join(dir, "family")
	require.NoError(t, os.WriteFile(script, []byte(hangingFamilyPlugin), 0o700))
	pids := filepath.Join(dir, "pid")
	t.Cleanup(func() {
		// Should the child have survived (a regression), do not leave it.
		if raw, err := os.ReadFile(pids + ".child"); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && procState(pid) != "" {
				_ = unix.Kill(pid, unix.SIGKILL)
				_, _ = unix.Wait4(pid, nil, 0, nil)
			}
		}
	})
	const timeout = 500 * time.Millisecond
	p := &provider{name: "family", path: script, args: []string{pids}, timeout: timeout, cache: cache.NewExpiring()}
	img, err := parseImage("reg.example.com/app")
	require.NoError(t, err)

	start := time.Now()
	_, err = p.run(context.Background(), img)
	took := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, "plugin family: image reg.example.com/app: timed out after 500ms and was killed", err.Error())
	assert.Less(t, took, timeout+time.Second, "the call must return soon after the timeout, not after WaitDelay (%s)", waitDelay)

	plugin, child := readPID(t, pids+".plugin"), readPID(t, pids+".child")
	assert.Empty(t, procState(plugin), "the plugin (pid %d) was waited for: no process, no zombie", plugin)
	// The child was orphaned when the plugin died, so it is now ours.
	require.Eventually(t, func() bool { return procState(child) == "Z" }, 5*time.Second, 10*time.Millisecond,
		"the plugin's child (pid %d) must be dead; state %q", child, procState(child))
	var ws unix.WaitStatus
	got, err := unix.Wait4(child, &ws, 0, nil)
	require.NoError(t, err)
	require.Equal(t, child, got)
	assert.True(t, ws.Signaled() && ws.Signal() == unix.SIGKILL, "the child died of SIGKILL, not %v", ws)
	assert.Empty(t, procState(child), "reaped child (pid %d) still in /proc", child)
}

// A failing plugin's stderr is not in the error, which reaches NodeImage
// statuses and Events: only that it failed and its exit status. The
// stderr is logged at V(4), redacted.
func TestPluginStderrStaysOutOfErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "noisy")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
echo 'calling https://sts.example.com/?X-Amz-Signature=sig0123456789 failed: {"SessionToken":"FwoGZXIvYXdzEXAMPLE"}' >&2
echo 'retry with token=tok0123456789abc' >&2
exit 3
`), 0o700))
	for _, v := range []int{2, 10} {
		var logs bytes.Buffer
		ctx := klog.NewContext(context.Background(),
			textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs), textlogger.Verbosity(v))))
		p := &provider{name: "noisy", path: script, timeout: 10 * time.Second, cache: cache.NewExpiring()}
		img, err := parseImage("reg.example.com/app")
		require.NoError(t, err)
		_, err = p.run(ctx, img)
		require.Error(t, err)
		assert.Equal(t, "plugin noisy: image reg.example.com/app: plugin failed (exit status 3)", err.Error())
		for _, secret := range []string{"sig0123456789", "FwoGZXIvYXdzEXAMPLE", "tok0123456789abc"} {
			assert.NotContains(t, logs.String(), secret, "at -v=%d", v)
		}
		if v < 4 {
			assert.NotContains(t, logs.String(), "sts.example.com", "stderr is not logged at -v=%d", v)
		} else {
			assert.Contains(t, logs.String(), "retry with token=[redacted]", "redacted stderr at -v=%d", v)
		}
		var exitErr interface{ ExitCode() int }
		assert.False(t, errors.As(err, &exitErr), "the error does not wrap the process state")
	}
}
