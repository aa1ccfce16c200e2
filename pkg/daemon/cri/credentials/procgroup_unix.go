//go:build unix

package credentials

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd lead a new process group and makes the end of
// its context kill that whole group with SIGKILL: the plugin and whatever
// it started that stayed in its group.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group's ID is the plugin's PID. Should Wait have reaped
		// the plugin meanwhile, the ID still names its group as long as
		// a member lives (the kernel hands out no PID that is a live
		// group's ID), and ESRCH says there is none left.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing the process group of plugin pid %d: %w", cmd.Process.Pid, err)
		}
		return nil
	}
}
