package healthz

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SocketMode is the permission of a unix socket the server listens on: the
// owner (the exec probe runs as the container's user) and its group.
const SocketMode fs.FileMode = 0o660

// ParseAddr splits an address as --addr takes it: "unix:///abs/path" or
// "unix:/abs/path" is a unix socket (network "unix", the path), anything
// else a TCP host:port (network "tcp", addr unchanged).
func ParseAddr(addr string) (network, address string, err error) {
	rest, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return "tcp", addr, nil
	}
	path := rest
	if p, ok := strings.CutPrefix(rest, "//"); ok {
		path = p
	}
	if path == "" || !filepath.IsAbs(path) {
		return "", "", fmt.Errorf("unix socket address %q must name an absolute path, e.g. unix:///run/kruise/health.sock", addr)
	}
	return "unix", filepath.Clean(path), nil
}

// DialTarget is ParseAddr for a client of this process's server: a TCP
// address with no host or an unspecified one (":10222", "0.0.0.0:10222")
// is dialled on the loopback address.
func DialTarget(addr string) (network, address string, err error) {
	network, address, err = ParseAddr(addr)
	if err != nil || network != "tcp" {
		return network, address, err
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", "", fmt.Errorf("address %q: %w", addr, err)
	}
	switch ip := net.ParseIP(host); {
	case host == "" || (ip != nil && ip.To4() != nil && ip.IsUnspecified()):
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "tcp", net.JoinHostPort(host, port), nil
}

// listen binds addr; a unix socket is created with SocketMode and removed
// when the listener is closed.
func listen(addr string) (net.Listener, error) {
	network, address, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	if network != "unix" {
		return net.Listen(network, address)
	}
	if err := RemoveStaleSocket(address); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: address, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(address, SocketMode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("setting the mode of %s: %w", address, err)
	}
	return ln, nil
}

// RemoveStaleSocket removes the socket file a previous run left behind. A
// socket something still accepts on, or a file that is not a socket, is an
// error rather than removed.
func RemoveStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = conn.Close()
		return fmt.Errorf("%s is in use by another process", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}
