package controller

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	o := NewOptions()
	o.Kube.Kubeconfig = path
	cfg, client, err := newClient(&o.Kube, "kruise-test")
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, float32(20), cfg.QPS, "defaults come from cli.NewKubeOptions")
	assert.NotNil(t, client.CoreV1())

	o.Kube.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	_, _, err = newClient(&o.Kube, "kruise-test")
	assert.ErrorContains(t, err, "loading kubeconfig")
}
