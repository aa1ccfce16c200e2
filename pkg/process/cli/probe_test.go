package cli

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func healthServer() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("[-]apiserver failed: not yet\nreadyz check failed"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/healthz", http.StatusFound) })
	return mux
}

func TestProbe(t *testing.T) {
	tcp := httptest.NewServer(healthServer())
	defer tcp.Close()
	_, port, err := net.SplitHostPort(tcp.Listener.Addr().String())
	require.NoError(t, err)

	dir, err := os.MkdirTemp("", "k")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "p.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	unix := httptest.NewUnstartedServer(healthServer())
	unix.Listener = ln
	unix.Start()
	defer unix.Close()

	// A port nothing listens on.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := closed.Addr().String()
	require.NoError(t, closed.Close())

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{name: "healthz on host:port", args: []string{"--addr=" + tcp.Listener.Addr().String()}, code: 0},
		{name: "bare :port means loopback", args: []string{"--addr=:" + port, "/healthz"}, code: 0},
		{name: "failing readyz", args: []string{"--addr=:" + port, "/readyz"}, code: 1,
			stderr: []string{"GET http://127.0.0.1:" + port + "/readyz: 503 Service Unavailable\n[-]apiserver failed: not yet\nreadyz check failed\n"}},
		{name: "redirect is not followed", args: []string{"--addr=:" + port, "/moved"}, code: 1, stderr: []string{"302 Found"}},
		{name: "unknown path", args: []string{"--addr=:" + port, "/nope"}, code: 1, stderr: []string{"404 Not Found", "404 page not found"}},
		{name: "connection refused", args: []string{"--addr=" + refused, "--timeout=2s"}, code: 1,
			stderr: []string{"GET http://" + refused + "/healthz failed:", "connection refused"}},
		{name: "unix socket ok", args: []string{"--addr=unix://" + sock}, code: 0},
		{name: "unix socket not ready", args: []string{"--addr=unix:" + sock, "/readyz"}, code: 1,
			stderr: []string{"GET /readyz on unix://" + sock + ": 503 Service Unavailable"}},
		{name: "missing socket", args: []string{"--addr=unix://" + filepath.Join(dir, "none.sock")}, code: 1,
			stderr: []string{"no such file or directory"}},
		{name: "relative path", args: []string{"--addr=:" + port, "healthz"}, code: 1,
			stderr: []string{"PATH must start with /", "Run 'kruise-test probe --help' for usage."}},
		{name: "bad address", args: []string{"--addr=unix:rel.sock"}, code: 1, stderr: []string{"--addr: unix socket address"}},
		{name: "bad timeout", args: []string{"--addr=:" + port, "--timeout=0s"}, code: 1, stderr: []string{"--timeout must be positive"}},
		{name: "two paths", args: []string{"--addr=:" + port, "/healthz", "/readyz"}, code: 1, stderr: []string{"accepts at most 1 arg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			out, exec := newTestCommand(func(context.Context) error { ran = true; return nil })
			assert.Equal(t, tc.code, exec(append([]string{"probe"}, tc.args...)...), out.String())
			for _, s := range tc.stderr {
				assert.Contains(t, out.String(), s)
			}
			if tc.code == 0 {
				assert.Empty(t, out.String())
			}
			assert.False(t, ran, "probe must not start the component")
		})
	}
}

func TestProbeDefaultsToTheComponentsAddr(t *testing.T) {
	cmd := NewCommand(Component{Name: "kruise-test", AddFlags: func(fs *pflag.FlagSet) {
		fs.String("addr", ":10999", "listen address")
	}})
	probe, _, err := cmd.Find([]string{"probe"})
	require.NoError(t, err)
	assert.Equal(t, ":10999", probe.Flags().Lookup("addr").DefValue)
	assert.Equal(t, "3s", probe.Flags().Lookup("timeout").DefValue)
}
