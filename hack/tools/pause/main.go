// Command pause is the process of the pod sandbox (pause) image used by the
// local test cluster. It blocks until SIGINT or SIGTERM and then exits 0. As
// PID 1 of the sandbox's PID namespace it also reaps every child that gets
// re-parented to it.
//
// Build it static: CGO_ENABLED=0 go build -trimpath -ldflags=-s -o pause ./hack/tools/pause
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("kruise test pause")
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	reap() // children that exited before the handler was installed
	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			os.Exit(0)
		}
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
