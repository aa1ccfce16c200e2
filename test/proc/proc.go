// Package proc runs a host process for a test (etcd, kube-apiserver, cert-manager-lite) and
// stops it when the test ends.
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Start starts bin with args, its output in logFile, killed with the test process
// (Pdeathsig) and stopped when the test ends: SIGTERM, SIGKILL after 15 s; the end of its log
// goes to the test's log if the test failed.
func Start(t testing.TB, logFile, bin string, args ...string) *exec.Cmd {
	t.Helper()
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = out.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logFile); err == nil {
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("--- tail of %s:\n%s", filepath.Base(logFile), b)
			}
		}
	})
	return cmd
}

// Running says whether cmd's process still runs (signal 0 fails once it exited and was reaped).
func Running(cmd *exec.Cmd) error {
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		return fmt.Errorf("%s exited (see its log): %w", filepath.Base(cmd.Path), err)
	}
	return nil
}
