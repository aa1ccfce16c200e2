package netns

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// A server listening on every address inside the namespace is reached through ForwardIn on the
// host's 127.0.0.1 (same port), and not directly; a client inside reaches a host server
// through ForwardOut.
func TestForwarders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (unshare, setns)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := New(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	// In: a server on 0.0.0.0:<port> inside.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	var inside net.Listener
	if err := n.Do(func() (err error) {
		inside, err = net.Listen("tcp", "0.0.0.0:"+strconv.Itoa(port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	go serveHello(inside, "in")
	if _, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		t.Fatal("the namespace's server is reachable on the host without a forwarder")
	}
	addr, err := n.ForwardIn(port, "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	if want := "127.0.0.1:" + strconv.Itoa(port); addr != want {
		t.Errorf("ForwardIn listens on %s, want %s", addr, want)
	}
	if got := readHello(t, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }); got != "in" {
		t.Errorf("through ForwardIn: %q, want %q", got, "in")
	}

	// Out: a server on the host's loopback, reached from inside at the same address.
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go serveHello(host, "out")
	if err := n.ForwardServer("https://" + host.Addr().String()); err != nil {
		t.Fatal(err)
	}
	got := readHello(t, func() (c net.Conn, err error) {
		err = n.Do(func() error { c, err = net.DialTimeout("tcp", host.Addr().String(), time.Second); return err })
		return c, err
	})
	if got != "out" {
		t.Errorf("through ForwardOut: %q, want %q", got, "out")
	}
	if err := n.ForwardServer("https://10.1.2.3:6443"); err == nil {
		t.Error("ForwardServer accepted a server that is not on loopback")
	}
}

func serveHello(l net.Listener, msg string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, msg)
		c.Close()
	}
}

func readHello(t *testing.T, dial func() (net.Conn, error)) string {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
