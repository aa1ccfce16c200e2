//go:build linux

package main

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// exists reports whether /proc has the process, zombie or not.
func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// reap collects children that have exited, as pause does on SIGCHLD for
// every orphan the kernel gives it as PID 1: after it, no zombie is left.
func TestReapCollectsExitedChildren(t *testing.T) {
	for range 3 {
		// Not os/exec: nothing else may wait for this child.
		pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 3"}, &syscall.ProcAttr{})
		if err != nil {
			t.Skipf("cannot start /bin/sh: %v", err)
		}
		// reap does not wait: the child has to have exited first.
		require.Eventually(t, func() bool {
			reap()
			return !exists(pid)
		}, 10*time.Second, 10*time.Millisecond, "child %d still in /proc", pid)
	}
}
