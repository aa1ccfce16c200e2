package options

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	logsapi "k8s.io/component-base/logs/api/v1"
)

func init() {
	// Every test applies the logging flags again.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

func newTestCommand(runFn func(ctx context.Context) error) (*bytes.Buffer, func(args ...string) int) {
	var stderr bytes.Buffer
	var flagValue string
	c := Component{
		Name:     "kruise-test",
		Short:    "test",
		AddFlags: func(fs *pflag.FlagSet) { fs.StringVar(&flagValue, "some-flag", "", "a flag") },
		Run:      runFn,
	}
	return &stderr, func(args ...string) int {
		cmd := NewCommand(c)
		var stdout bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(args)
		code := run(cmd, &stderr)
		stderr.Write(stdout.Bytes())
		return code
	}
}

func TestCommandVersion(t *testing.T) {
	ran := false
	out, exec := newTestCommand(func(context.Context) error { ran = true; return nil })
	require.Equal(t, 0, exec("--version"))
	assert.Contains(t, out.String(), "kruise-test v0.0.0-dev (commit ")
	assert.False(t, ran)
}

func TestCommandUsageErrors(t *testing.T) {
	out, exec := newTestCommand(func(context.Context) error { return nil })
	assert.Equal(t, 1, exec("--no-such-flag"))
	assert.Contains(t, out.String(), "Error: unknown flag: --no-such-flag\nRun 'kruise-test --help' for usage.")
	out.Reset()
	assert.Equal(t, 1, exec("--logging-format=xml"))
	assert.Contains(t, out.String(), "invalid logging flags")
	out.Reset()
	assert.Equal(t, 1, exec("positional"))
	assert.Contains(t, out.String(), "takes no arguments")
}

func TestCommandRunErrorAndSuccess(t *testing.T) {
	_, exec := newTestCommand(func(context.Context) error { return errors.New("boom") })
	assert.Equal(t, 1, exec("--some-flag=x"))
	_, exec = newTestCommand(func(context.Context) error { return nil })
	assert.Equal(t, 0, exec()) // other logging flags: see the binary smoke test (logging can be applied once per process)
}

func TestCommandSIGTERMCancelsContext(t *testing.T) {
	started := make(chan struct{})
	_, exec := newTestCommand(func(ctx context.Context) error {
		close(started)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("context was not cancelled by SIGTERM")
		}
	})
	go func() {
		<-started
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
	assert.Equal(t, 0, exec())
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))

	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("KUBECONFIG", "")
	o := NewKubeOptions()
	_, err := o.RESTConfig("kruise-test")
	assert.ErrorContains(t, err, "neither --kubeconfig nor $KUBECONFIG is set")

	t.Setenv("KUBECONFIG", path)
	cfg, err := o.RESTConfig("kruise-test")
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, float32(20), cfg.QPS)
	assert.Contains(t, cfg.UserAgent, "kruise-test/")

	o.Kubeconfig = filepath.Join(dir, "missing")
	_, err = o.RESTConfig("kruise-test")
	assert.ErrorContains(t, err, "loading kubeconfig "+o.Kubeconfig)

	o.QPS = 0
	assert.ErrorContains(t, o.Validate(), "--kube-api-qps")
}
