package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSocketFile(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		endpoint string // RuntimeEndpoint after Validate; empty: probe
		err      string
	}{
		{name: "default probes", args: nil},
		{name: "empty, as OpenKruise's chart passes it", args: []string{"--socket-file="}},
		{name: "file name", args: []string{"--socket-file=criproxy.sock"}, endpoint: "unix:///var/run/criproxy.sock"},
		{name: "nested, under another run dir", args: []string{"--host-run-dir=/hostvarrun", "--socket-file=k3s/containerd/containerd.sock"},
			endpoint: "unix:///hostvarrun/k3s/containerd/containerd.sock"},
		{name: "dot and double slash are cleaned", args: []string{"--socket-file=./containerd//containerd.sock"},
			endpoint: "unix:///var/run/containerd/containerd.sock"},
		{name: "explicit endpoint alone", args: []string{"--runtime-endpoint=unix:///run/x.sock"}, endpoint: "unix:///run/x.sock"},
		{name: "both", args: []string{"--socket-file=criproxy.sock", "--runtime-endpoint=unix:///run/x.sock"},
			err: "--socket-file and --runtime-endpoint both name the CRI socket"},
		{name: "absolute", args: []string{"--socket-file=/run/containerd/containerd.sock"}, err: "must be relative to --host-run-dir"},
		{name: "escapes the run dir", args: []string{"--socket-file=../run/containerd.sock"}, err: `".." is not allowed`},
		{name: "escapes further down", args: []string{"--socket-file=a/../../b.sock"}, err: `".." is not allowed`},
		{name: "no run dir", args: []string{"--host-run-dir=", "--socket-file=x.sock"}, err: "--host-run-dir must not be empty when --socket-file is set"},
		{name: "relative run dir", args: []string{"--host-run-dir=var/run", "--socket-file=x.sock"}, err: "socket path must be absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(t, tc.args)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.endpoint, o.RuntimeEndpoint)
			require.NoError(t, o.Validate(), "validating again is fine")
			assert.Equal(t, tc.endpoint, o.RuntimeEndpoint)
		})
	}
}

func TestDefaultAddrIsNotOpenKruises(t *testing.T) {
	assert.Equal(t, ":10223", NewOptions().Addr)
}

func TestRuntimeRequestTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		err  string
	}{
		{args: nil, want: 2 * time.Minute},
		{args: []string{"--runtime-request-timeout=20s"}, want: 20 * time.Second},
		{args: []string{"--runtime-request-timeout=0s"}, err: "--runtime-request-timeout must be positive, got 0s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o, err := parseOptions(t, tc.args)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.RuntimeRequestTimeout)
		})
	}
}

// parseOptions is the daemon's options on node-a after args, and what Validate says of them.
func parseOptions(t *testing.T, args []string) (*Options, error) {
	t.Helper()
	t.Setenv(NodeNameEnv, "node-a")
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	return o, o.Validate()
}
