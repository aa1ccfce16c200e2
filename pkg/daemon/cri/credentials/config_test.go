//go:build unix

package credentials

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const validProvider = `
  - name: ecr
    matchImages: ["*.dkr.ecr.*.amazonaws.com"]
    defaultCacheDuration: 12h
    apiVersion: credentialprovider.kubelet.k8s.io/v1
`

const configHeader = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:`

func TestLoadPluginsValid(t *testing.T) {
	dir := binDir(t, "ecr", "acr")
	yamlPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(yamlPath, []byte(configHeader+validProvider+`
  - name: acr
    matchImages: ["*.azurecr.io", "registry.io:8080/path"]
    defaultCacheDuration: 0s
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: ["--v=2"]
    env:
      - name: AZURE_ENV
        value: x
`), 0o600))
	ps, err := LoadPlugins(yamlPath, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"ecr", "acr"}, ps.Names())
	assert.Equal(t, []string{"AZURE_ENV=x"}, ps.providers[1].env)
	assert.Equal(t, DefaultPluginTimeout, ps.providers[0].timeout)

	jsonPath := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(jsonPath, []byte(`{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig",
		"providers":[{"name":"ecr","matchImages":["*.dkr.ecr.*.amazonaws.com"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}`), 0o600))
	ps, err = LoadPlugins(jsonPath, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"ecr"}, ps.Names())
	assert.Nil(t, (*Plugins)(nil).Names())
}

func TestLoadPluginsErrors(t *testing.T) {
	cases := []struct {
		name   string
		config string
		want   []string
	}{
		{"not YAML", "providers: [", []string{"not YAML or JSON"}},
		{"wrong apiVersion", strings.Replace(configHeader, "kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v1beta1", 1) + validProvider,
			[]string{`apiVersion "kubelet.config.k8s.io/v1beta1"`}},
		{"wrong kind", strings.Replace(configHeader, "CredentialProviderConfig", "KubeletConfiguration", 1) + validProvider,
			[]string{`kind "KubeletConfiguration"`}},
		{"unknown field", configHeader + validProvider + "    matchImage: [x.io]\n", []string{`unknown field "matchImage"`}},
		{"no providers", configHeader + " []\n", []string{"at least one provider is required"}},
		{"duplicate names", configHeader + validProvider + validProvider, []string{"providers[1] (ecr): duplicate name"}},
		{"name is a path", configHeader + strings.Replace(validProvider, "name: ecr", "name: ../ecr", 1),
			[]string{"providers[0] (../ecr): name must be a file name"}},
		{"name is dot-dot", configHeader + strings.Replace(validProvider, "name: ecr", `name: ".."`, 1),
			[]string{`name cannot be ".."`}},
		{"name missing", configHeader + strings.Replace(validProvider, "name: ecr", `name: ""`, 1),
			[]string{"providers[0]: name is required"}},
		{"binary missing", configHeader + strings.Replace(validProvider, "name: ecr", "name: gcr", 1),
			[]string{"providers[0] (gcr): plugin binary", "gcr does not exist"}},
		{"binary not executable", configHeader + strings.Replace(validProvider, "name: ecr", "name: noexec", 1),
			[]string{"noexec is not executable"}},
		{"binary is a directory", configHeader + strings.Replace(validProvider, "name: ecr", "name: subdir", 1),
			[]string{"subdir is not a regular file"}},
		{"empty matchImages", configHeader + strings.Replace(validProvider, `["*.dkr.ecr.*.amazonaws.com"]`, "[]", 1),
			[]string{"matchImages: at least one pattern is required"}},
		{"invalid matchImages", configHeader + strings.Replace(validProvider, `"*.dkr.ecr.*.amazonaws.com"`, `"[bad.io", "a.io:port"`, 1),
			[]string{`matchImages: "[bad.io" is invalid`, `matchImages: "a.io:port" is invalid`}},
		{"negative defaultCacheDuration", configHeader + strings.Replace(validProvider, "12h", "-1m", 1),
			[]string{"defaultCacheDuration must be >= 0"}},
		{"missing defaultCacheDuration", configHeader + strings.Replace(validProvider, "defaultCacheDuration: 12h", "", 1),
			[]string{"defaultCacheDuration is required"}},
		{"v1beta1 provider", configHeader + strings.Replace(validProvider, "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1beta1", 1),
			[]string{`apiVersion "credentialprovider.kubelet.k8s.io/v1beta1" is not supported (only credentialprovider.kubelet.k8s.io/v1)`}},
		{"missing provider apiVersion", configHeader + strings.Replace(validProvider, "apiVersion: credentialprovider.kubelet.k8s.io/v1", "", 1),
			[]string{"apiVersion is required"}},
		{"bad env name", configHeader + validProvider + "    env: [{name: \"A=B\", value: x}]\n",
			[]string{`env[0]: invalid name "A=B"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := binDir(t, "ecr")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "subdir"), 0o755))
			path := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.config), 0o600))
			ps, err := LoadPlugins(path, dir)
			require.Error(t, err)
			assert.Nil(t, ps)
			assert.Contains(t, err.Error(), "credential provider config "+path)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadPluginsMissingFile(t *testing.T) {
	_, err := LoadPlugins(filepath.Join(t.TempDir(), "nope.yaml"), t.TempDir())
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
