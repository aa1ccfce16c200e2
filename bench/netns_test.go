//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// netns is a network namespace of its own, with only a loopback interface, held by a sleeping
// process the benchmark started. A program run in it may listen on any address (OpenKruise's
// manager binds its webhook server to 0.0.0.0): nothing outside the namespace reaches it except
// through the forwarders below, which listen on the host's 127.0.0.1 only.
type netns struct {
	holder *process
	path   string // /proc/<holder>/ns/net

	mu        sync.Mutex
	listeners []net.Listener
}

// newNetns starts the holder (`unshare --net`, loopback up) and waits until its namespace is
// ready for listeners.
func newNetns(ctx context.Context, logf func(string, ...any)) (*netns, error) {
	cmd := exec.Command("unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec sleep 86400")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	holder, err := startProcess(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting the network namespace's holder: %w", err)
	}
	n := &netns{holder: holder, path: fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)}
	mine, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		n.close()
		return nil, err
	}
	// Ready once the holder is in its own namespace and 127.0.0.1 can be bound there.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if l, err := os.Readlink(n.path); err != nil || l == mine {
			return false, nil
		}
		err := n.do(func() error {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err == nil {
				l.Close()
			}
			return err
		})
		return err == nil, nil
	})
	if err != nil {
		n.close()
		return nil, fmt.Errorf("network namespace of pid %d not ready: %w", cmd.Process.Pid, err)
	}
	logf("network namespace %s (holder pid %d)", n.path, cmd.Process.Pid)
	return n, nil
}

// do runs f on an OS thread switched into the namespace: sockets f creates belong to it. The
// thread is switched back; if that fails it stays locked and dies with its goroutine.
func (n *netns) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(self)
		target, err := unix.Open(n.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering %s: %w", n.path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leaving %s: %w", n.path, err))
			return // the thread stays locked: the runtime ends it with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// forwardIn listens on the host's 127.0.0.1 (port 0: any) and forwards each connection to addr
// inside the namespace; it returns the host address.
func (n *netns) forwardIn(addr string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	n.serve(l, func() (net.Conn, error) {
		var c net.Conn
		err := n.do(func() error {
			var err error
			c, err = net.DialTimeout("tcp", addr, 5*time.Second)
			return err
		})
		return c, err
	})
	return l.Addr().String(), nil
}

// forwardOut listens on addr inside the namespace and forwards each connection to the same
// address on the host (the API server's loopback port).
func (n *netns) forwardOut(addr string) error {
	var l net.Listener
	if err := n.do(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return fmt.Errorf("listening on %s in %s: %w", addr, n.path, err)
	}
	n.serve(l, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) })
	return nil
}

func (n *netns) serve(l net.Listener, dial func() (net.Conn, error)) {
	n.mu.Lock()
	n.listeners = append(n.listeners, l)
	n.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return // closed
			}
			go func() {
				out, err := dial()
				if err != nil {
					in.Close()
					return
				}
				pipe(in, out)
			}()
		}
	}()
}

// pipe copies both ways until either side ends, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

// command is name with args run inside the namespace (nsenter).
func (n *netns) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.path, "--", name}, args...)...)
}

// close stops the forwarders and the holder (by its PID).
func (n *netns) close() {
	n.mu.Lock()
	for _, l := range n.listeners {
		l.Close()
	}
	n.listeners = nil
	n.mu.Unlock()
	n.holder.stop(5 * time.Second)
}

// process is a process the benchmark started, reaped as soon as it ends.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// exited says whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process (by its PID), then SIGKILL after grace, and waits for it.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// pid is the process's PID as text, for logs.
func (p *process) pid() string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(p.cmd.Process.Pid)
}
