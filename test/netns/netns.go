// Package netns runs a program that listens on every address (OpenKruise's manager and
// kruise-rollout bind their webhook servers to 0.0.0.0) in a network namespace of its own, reached
// only through forwarders on the host's 127.0.0.1: the project's servers bind to loopback only.
// The benchmarks (bench/) and the e2e tests (test/e2e) share it. It needs root (unshare, setns).
package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
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

// Namespace is a network namespace of its own, with only a loopback interface, held by a
// sleeping process the caller started. A program run in it may listen on any address: nothing
// outside the namespace reaches it except through the forwarders below, which listen on the
// host's 127.0.0.1 only.
type Namespace struct {
	holder *Process
	path   string // /proc/<holder>/ns/net

	mu        sync.Mutex
	listeners []net.Listener
}

// New starts the holder (`unshare --net`, loopback up) and waits until its namespace is ready
// for listeners. The holder is killed if the caller's process dies first (Pdeathsig); Close
// stops it.
func New(ctx context.Context, logf func(string, ...any)) (*Namespace, error) {
	cmd := exec.Command("unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec sleep 86400")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	holder, err := StartProcess(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting the network namespace's holder: %w", err)
	}
	n := &Namespace{holder: holder, path: fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)}
	mine, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		n.Close()
		return nil, err
	}
	// Ready once the holder is in its own namespace with its loopback up: binding 127.0.0.1
	// works before `ip link set lo up`, connecting does not (network unreachable).
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if l, err := os.Readlink(n.path); err != nil || l == mine {
			return false, nil
		}
		err := n.Do(func() error {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer l.Close()
			c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		return err == nil, nil
	})
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("network namespace of pid %d not ready: %w", cmd.Process.Pid, err)
	}
	logf("network namespace %s (holder pid %d)", n.path, cmd.Process.Pid)
	return n, nil
}

// Do runs f on an OS thread switched into the namespace: sockets f creates belong to it. The
// thread is switched back; if that fails it stays locked and dies with its goroutine.
func (n *Namespace) Do(f func() error) error {
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

// ForwardIn listens on the host's 127.0.0.1 at port (0: any free one) and forwards each
// connection to addr inside the namespace; it returns the host address.
func (n *Namespace) ForwardIn(port int, addr string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	n.serve(l, func() (net.Conn, error) {
		var c net.Conn
		err := n.Do(func() error {
			var err error
			c, err = net.DialTimeout("tcp", addr, 5*time.Second)
			return err
		})
		return c, err
	})
	return l.Addr().String(), nil
}

// ForwardServer forwards the URL server (a kubeconfig's server, on the host's loopback) from
// inside the namespace to the host: a client in the namespace uses the same kubeconfig.
func (n *Namespace) ForwardServer(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("server %q: %w", server, err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() || u.Port() == "" {
		return fmt.Errorf("server %s is not a loopback address and port: the forwarder serves only those", server)
	}
	return n.ForwardOut(u.Host)
}

// ForwardOut listens on addr inside the namespace and forwards each connection to the same
// address on the host (the API server's loopback port).
func (n *Namespace) ForwardOut(addr string) error {
	var l net.Listener
	if err := n.Do(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return fmt.Errorf("listening on %s in %s: %w", addr, n.path, err)
	}
	n.serve(l, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) })
	return nil
}

func (n *Namespace) serve(l net.Listener, dial func() (net.Conn, error)) {
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

// Command is name with args run inside the namespace (nsenter, which execs name: the PID is
// name's).
func (n *Namespace) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.path, "--", name}, args...)...)
}

// Close stops the forwarders and the holder (by its PID).
func (n *Namespace) Close() {
	n.mu.Lock()
	for _, l := range n.listeners {
		l.Close()
	}
	n.listeners = nil
	n.mu.Unlock()
	n.holder.Stop(5 * time.Second)
}

// Process is a process the caller started, reaped as soon as it ends.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// StartProcess starts cmd and reaps it in the background.
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Exited says whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process (by its PID), then SIGKILL after grace, and waits for it.
func (p *Process) Stop(grace time.Duration) {
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

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// PID is the process's PID (0 for no process).
func (p *Process) PID() int {
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// FreeLoopbackPort is a TCP port on 127.0.0.1 that nothing listens on at the moment of the call,
// for a server started next (as a forwarder's or a process's port).
func FreeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
