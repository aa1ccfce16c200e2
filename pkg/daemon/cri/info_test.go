package cri_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

func verboseFixture(t *testing.T, name string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "verbose", name))
	require.NoError(t, err)
	return map[string]string{cri.VerboseInfoKey: string(b)}
}

// The fixtures have the shape of containerd's (config and runtimeSpec) and
// CRI-O's (runtimeSpec only) verbose info: the image's own env (GREETING,
// PATH) is in the OCI spec only.
func TestCreatedEnv(t *testing.T) {
	for _, tc := range []struct {
		file, source string
		imageEnvSeen bool
	}{
		{"containerd.json", cri.EnvFromCRIConfig, false},
		{"crio.json", cri.EnvFromOCISpec, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			env, err := cri.ContainerInfo{Verbose: verboseFixture(t, tc.file)}.CreatedEnv()
			require.NoError(t, err)
			assert.Equal(t, tc.source, env.Source)
			for name, want := range map[string]string{"TRACK": "stable", "OWNER": "team-a", "EMPTY": "", "PLAIN": "x"} {
				got, ok := env.Lookup(name)
				assert.True(t, ok, name)
				assert.Equal(t, want, got, name)
			}
			_, ok := env.Lookup("GREETING")
			assert.Equal(t, tc.imageEnvSeen, ok, "the image's env")
			_, ok = env.Lookup("NOPE")
			assert.False(t, ok)
		})
	}
}

func TestCreatedEnvOCISpecFirstWins(t *testing.T) {
	info := map[string]string{cri.VerboseInfoKey: `{"runtimeSpec":{"process":{"env":["A=1","A=2","B"]}}}`}
	env, err := cri.ContainerInfo{Verbose: info}.CreatedEnv()
	require.NoError(t, err)
	a, _ := env.Lookup("A")
	assert.Equal(t, "1", a, "what getenv finds")
	b, ok := env.Lookup("B")
	assert.True(t, ok)
	assert.Empty(t, b)
}

func TestCreatedEnvCannotTell(t *testing.T) {
	for _, tc := range []struct {
		name string
		info map[string]string
		want error
	}{
		{"no info map", nil, cri.ErrNoVerboseInfo},
		{"other keys only", map[string]string{"pid": "1"}, cri.ErrNoVerboseInfo},
		{"no env in the document", map[string]string{cri.VerboseInfoKey: `{"sandboxID":"x","runtimeSpec":{}}`}, cri.ErrNoEnvInInfo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cri.ContainerInfo{Verbose: tc.info}.CreatedEnv()
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err := cri.ContainerInfo{Verbose: map[string]string{cri.VerboseInfoKey: "{"}}.CreatedEnv()
	assert.ErrorContains(t, err, "decoding the runtime's verbose container info")
}

func TestContainerInfoAsksVerbose(t *testing.T) {
	env := newFakeEnv(t)
	c := podContainer("app-1", "app", 1, running)
	c.Info = verboseFixture(t, "containerd.json")
	env.fake.AddContainer(c)

	got, err := env.rt.ContainerInfo(context.Background(), "app-1")
	require.NoError(t, err)
	assert.Equal(t, "app-1", got.ID)
	assert.Equal(t, "app", got.Name)
	assert.Equal(t, cri.ContainerRunning, got.State)
	assert.Equal(t, c.Info, got.Verbose)
	assert.Empty(t, env.fake.ExecCalls(), "nothing runs in the container")

	_, err = env.rt.ContainerInfo(context.Background(), "gone")
	require.Error(t, err)
	assert.Equal(t, codes.NotFound, status.Code(err))
}
