package healthz

import (
	"context"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAddrAndDialTarget(t *testing.T) {
	tests := []struct {
		addr             string
		network, address string // ParseAddr
		dial             string // DialTarget's address
		err              string
	}{
		{addr: ":10222", network: "tcp", address: ":10222", dial: "127.0.0.1:10222"},
		{addr: "0.0.0.0:10222", network: "tcp", address: "0.0.0.0:10222", dial: "127.0.0.1:10222"},
		{addr: "[::]:10222", network: "tcp", address: "[::]:10222", dial: "[::1]:10222"},
		{addr: "10.0.0.1:80", network: "tcp", address: "10.0.0.1:80", dial: "10.0.0.1:80"},
		{addr: "localhost:80", network: "tcp", address: "localhost:80", dial: "localhost:80"},
		{addr: "unix:///run/kruise/controller.sock", network: "unix", address: "/run/kruise/controller.sock", dial: "/run/kruise/controller.sock"},
		{addr: "unix:/run/kruise/../kruise/c.sock", network: "unix", address: "/run/kruise/c.sock", dial: "/run/kruise/c.sock"},
		{addr: "unix://run/c.sock", err: "must name an absolute path"},
		{addr: "unix:c.sock", err: "must name an absolute path"},
		{addr: "unix://", err: "must name an absolute path"},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			network, address, err := ParseAddr(tc.addr)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				_, _, err = DialTarget(tc.addr)
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.network, network)
			assert.Equal(t, tc.address, address)
			network, address, err = DialTarget(tc.addr)
			require.NoError(t, err)
			assert.Equal(t, tc.network, network)
			assert.Equal(t, tc.dial, address)
		})
	}
	_, _, err := DialTarget("no-port")
	assert.ErrorContains(t, err, `address "no-port"`)
}

// shortTempDir keeps unix socket paths well under the 108-byte limit.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "k")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

func TestServeOnUnixSocket(t *testing.T) {
	dir := shortTempDir(t)
	path := filepath.Join(dir, "h.sock")

	// A socket file left behind by a run that did not clean up.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	stale.SetUnlinkOnClose(false)
	require.NoError(t, stale.Close())
	require.FileExists(t, path)

	s := New(Options{Addr: "unix://" + path, Healthz: []Checker{Ping}, Readyz: []Checker{Ping}})
	addr, err := s.Listen()
	require.NoError(t, err, "a stale socket is replaced")
	assert.Equal(t, "unix", addr.Network())
	assert.Equal(t, path, addr.String())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSocket|SocketMode, fi.Mode()&(fs.ModeType|fs.ModePerm))

	// A second server on the same, live socket is refused and leaves it alone.
	_, err = New(Options{Addr: "unix:" + path}).Listen()
	assert.ErrorContains(t, err, "is in use by another process")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	resp, err := unixClient(path).Get("http://kruise/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	assert.NoFileExists(t, path, "the socket is removed on shutdown")
}

func TestUnixSocketErrors(t *testing.T) {
	dir := shortTempDir(t)
	regular := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(regular, []byte("x"), 0o600))
	_, err := New(Options{Addr: "unix://" + regular}).Listen()
	assert.ErrorContains(t, err, "exists and is not a socket")
	assert.FileExists(t, regular, "a file that is not a socket is never removed")

	_, err = New(Options{Addr: "unix://" + filepath.Join(dir, "missing", "h.sock")}).Listen()
	assert.ErrorContains(t, err, "listening for health and metrics on")

	_, err = New(Options{Addr: "unix:relative.sock"}).Listen()
	assert.ErrorContains(t, err, "must name an absolute path")
}
