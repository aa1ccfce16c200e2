package cri_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

const probeTimeout = 500 * time.Millisecond

func TestParseEndpoint(t *testing.T) {
	long := "/" + strings.Repeat("x", 120) + ".sock"
	for _, tc := range []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "/run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{in: "unix:///run/crio/crio.sock", want: "/run/crio/crio.sock"},
		{in: "/run//x/../containerd.sock", want: "/run/containerd.sock"},
		{in: "", wantErr: "empty"},
		{in: "tcp://127.0.0.1:1234", wantErr: `unsupported scheme "tcp"`},
		{in: "unix://run/x.sock", wantErr: "must be absolute"},
		{in: "containerd.sock", wantErr: "must be absolute"},
		{in: long, wantErr: "unix sockets allow at most 107"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := cri.ParseEndpoint(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func fakeAt(t *testing.T, path, name, version string) *critest.FakeRuntime {
	t.Helper()
	f := critest.NewFakeRuntime()
	f.SetVersion(name, version, "v1")
	critest.Serve(t, path, f)
	return f
}

func TestDiscoverProbesInOrder(t *testing.T) {
	dir := critest.ShortTempDir(t)
	// First candidate is a regular file, second is missing, later ones answer:
	// the first one that answers (crio/crio.sock) wins over crio.sock.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "containerd"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "containerd", "containerd.sock"), nil, 0o600))
	fakeAt(t, filepath.Join(dir, "crio", "crio.sock"), "cri-o", "1.30.0")
	fakeAt(t, filepath.Join(dir, "crio.sock"), "cri-o", "0.0.1-wrong")
	fakeAt(t, filepath.Join(dir, "cri-dockerd.sock"), "docker", "25.0.0")

	rt, info, err := cri.Discover(context.Background(), cri.DiscoverOptions{HostRunDir: dir, ProbeTimeout: probeTimeout})
	require.NoError(t, err)
	defer rt.Close()
	assert.Equal(t, filepath.Join(dir, "crio", "crio.sock"), rt.Endpoint())
	assert.Equal(t, cri.VersionInfo{RuntimeName: "cri-o", RuntimeVersion: "1.30.0", RuntimeAPIVersion: "v1"}, info)
}

func TestDiscoverPrefersContainerd(t *testing.T) {
	dir := critest.ShortTempDir(t)
	fakeAt(t, filepath.Join(dir, "crio", "crio.sock"), "cri-o", "1.30.0")
	fakeAt(t, filepath.Join(dir, "containerd", "containerd.sock"), "containerd", "1.7.0")

	rt, info, err := cri.Discover(context.Background(), cri.DiscoverOptions{HostRunDir: dir, ProbeTimeout: probeTimeout})
	require.NoError(t, err)
	defer rt.Close()
	assert.Equal(t, "containerd", info.RuntimeName)
}

func TestDiscoverExplicitEndpointWins(t *testing.T) {
	dir := critest.ShortTempDir(t)
	fakeAt(t, filepath.Join(dir, "containerd", "containerd.sock"), "containerd", "1.7.0")
	custom := filepath.Join(dir, "custom.sock")
	fakeAt(t, custom, "cri-o", "1.31.0")

	for _, ep := range []string{custom, "unix://" + custom} {
		rt, info, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: ep, HostRunDir: dir, ProbeTimeout: probeTimeout})
		require.NoError(t, err, ep)
		assert.Equal(t, "cri-o", info.RuntimeName)
		assert.Equal(t, custom, rt.Endpoint())
		require.NoError(t, rt.Close())
	}

	// An explicit endpoint that does not work is an error even though a
	// candidate would have: no silent fallback.
	_, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: filepath.Join(dir, "nope.sock"), HostRunDir: dir, ProbeTimeout: probeTimeout})
	require.Error(t, err)
	assert.ErrorIs(t, err, cri.ErrNoSocket)
	assert.Contains(t, err.Error(), "--runtime-endpoint")
	assert.Contains(t, err.Error(), "nope.sock")
}

func TestDiscoverRejectsFileThatIsNotASocket(t *testing.T) {
	dir := critest.ShortTempDir(t)
	path := filepath.Join(dir, "containerd.sock")
	require.NoError(t, os.WriteFile(path, []byte("not a socket"), 0o600))

	_, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: path, ProbeTimeout: probeTimeout})
	require.Error(t, err)
	assert.ErrorIs(t, err, cri.ErrNotSocket)
	var derr *cri.DiscoveryError
	require.ErrorAs(t, err, &derr)
	require.Len(t, derr.Attempts, 1)
	assert.Equal(t, path, derr.Attempts[0].Path)
}

func TestDiscoverRejectsSocketThatDoesNotSpeakCRI(t *testing.T) {
	dir := critest.ShortTempDir(t)

	// A gRPC server without the CRI service: Unimplemented.
	grpcOnly := filepath.Join(dir, "grpc.sock")
	critest.Serve(t, grpcOnly, nil)
	_, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: grpcOnly, ProbeTimeout: probeTimeout})
	require.Error(t, err)
	assert.ErrorIs(t, err, cri.ErrNotCRI)

	// A plain socket that accepts and hangs up: not gRPC at all.
	raw := filepath.Join(dir, "raw.sock")
	ln, err := net.Listen("unix", raw)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			_ = c.Close()
		}
	}()
	start := time.Now()
	_, _, err = cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: raw, ProbeTimeout: probeTimeout})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*probeTimeout, "probe must be bounded by its timeout")
	assert.Contains(t, err.Error(), raw)
}

func TestDiscoverHungRuntimeTimesOut(t *testing.T) {
	dir := critest.ShortTempDir(t)
	f := fakeAt(t, filepath.Join(dir, "containerd.sock"), "containerd", "1.7.0")
	f.Hang(true)
	defer f.Hang(false)

	start := time.Now()
	_, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{HostRunDir: dir, ProbeTimeout: probeTimeout})
	require.Error(t, err)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Contains(t, err.Error(), "containerd.sock: no answer within 500ms")
	assert.Less(t, time.Since(start), 5*probeTimeout)
}

func TestDiscoverNothingListsEveryCandidate(t *testing.T) {
	dir := critest.ShortTempDir(t)
	_, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{HostRunDir: dir, ProbeTimeout: probeTimeout})
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "no CRI runtime found under "+dir)
	for _, c := range cri.CandidateSockets {
		assert.Contains(t, msg, filepath.Join(dir, c)+": no such socket")
	}
	var derr *cri.DiscoveryError
	require.True(t, errors.As(err, &derr))
	assert.Len(t, derr.Attempts, len(cri.CandidateSockets))
}

func TestRuntimeFollowsRestarts(t *testing.T) {
	dir := critest.ShortTempDir(t)
	path := filepath.Join(dir, "containerd.sock")
	srv := critest.Serve(t, path, critest.NewFakeRuntime())

	rt, _, err := cri.Connect(context.Background(), path, probeTimeout)
	require.NoError(t, err)
	defer rt.Close()

	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	_, err = rt.Version(ctx)
	cancel()
	require.Error(t, err, "runtime is gone")

	f := critest.NewFakeRuntime()
	f.SetVersion("containerd", "1.7.1", "v1")
	critest.Serve(t, path, f)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		info, err := rt.Version(ctx)
		return err == nil && info.RuntimeVersion == "1.7.1"
	}, 10*time.Second, 100*time.Millisecond, "the same Runtime must reconnect when the runtime comes back")
}

// TestRealRuntime dials a real runtime when KRUISE_TEST_CRI_ENDPOINT names
// its socket, e.g. a containerd started for a smoke test.
func TestRealRuntime(t *testing.T) {
	ep := os.Getenv("KRUISE_TEST_CRI_ENDPOINT")
	if ep == "" {
		t.Skip("KRUISE_TEST_CRI_ENDPOINT not set")
	}
	rt, info, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: ep})
	require.NoError(t, err)
	defer rt.Close()
	t.Logf("runtime %s %s, CRI %s at %s", info.RuntimeName, info.RuntimeVersion, info.RuntimeAPIVersion, rt.Endpoint())
	assert.NotEmpty(t, info.RuntimeName)
	assert.NotEmpty(t, info.RuntimeVersion)
	assert.Equal(t, "v1", info.RuntimeAPIVersion)
}
