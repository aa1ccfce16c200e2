package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

// eventsRuntime adds a server-streaming call to the fake runtime: it sends
// one event per container ID given, each prefixed with the caller's
// x-kruise-test metadata, to show that streams and metadata pass through.
type eventsRuntime struct {
	*critest.FakeRuntime
	ids []string
}

func (e *eventsRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, s grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	md, _ := metadata.FromIncomingContext(s.Context())
	tag := strings.Join(md.Get("x-kruise-test"), ",")
	if err := s.SendHeader(metadata.Pairs("x-upstream", "fake")); err != nil {
		return err
	}
	for _, id := range e.ids {
		if err := s.Send(&runtimeapi.ContainerEventResponse{ContainerId: tag + "/" + id}); err != nil {
			return err
		}
	}
	s.SetTrailer(metadata.Pairs("x-upstream-done", "yes"))
	return nil
}

type env struct {
	fake   *critest.FakeRuntime
	proxy  *proxy
	rt     cri.Runtime
	conn   *grpc.ClientConn
	record string
	listen string
}

func newEnv(t *testing.T, opts ...func(dir string, c *config)) env {
	t.Helper()
	dir := critest.ShortTempDir(t)
	upstream := filepath.Join(dir, "containerd.sock")
	fake := critest.NewFakeRuntime()
	critest.Serve(t, upstream, &eventsRuntime{FakeRuntime: fake, ids: []string{"a", "b", "c"}})

	cfg := config{listen: filepath.Join(dir, "proxy.sock"), upstream: upstream, record: filepath.Join(dir, "pulls.jsonl")}
	for _, o := range opts {
		o(dir, &cfg)
	}
	p, err := newProxy(cfg)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.serve() }()
	t.Cleanup(func() {
		p.stop()
		assert.NoError(t, <-served)
	})

	rt, info, err := cri.Connect(context.Background(), cfg.listen, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	assert.Equal(t, cri.VersionInfo{RuntimeName: "containerd", RuntimeVersion: "1.7.0", RuntimeAPIVersion: "v1"}, info)

	conn, err := grpc.NewClient("unix://"+cfg.listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return env{fake: fake, proxy: p, rt: rt, conn: conn, record: cfg.record, listen: cfg.listen}
}

func readRecords(t *testing.T, path string) ([]map[string]any, string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out, string(raw)
}

func TestProxyForwardsAndRecordsPulls(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	assert.Equal(t, 1, e.fake.Calls(), "Version reached the runtime through the proxy")

	labels := map[string]string{"kruise.io/image-pull-job": "job-a"}
	annotations := map[string]string{"kruise.io/reason": "prewarm"}
	const password = "hunter2-very-secret"
	before := time.Now()
	ref, err := e.rt.PullImage(ctx, cri.PullRequest{
		Image: "registry.local/private/app:1", SandboxLabels: labels, SandboxAnnotations: annotations,
		Auth: &cri.Auth{Username: "robot", Password: password, ServerAddress: "registry.local"},
	})
	require.NoError(t, err)
	assert.Regexp(t, `^sha256:`, ref)

	const missing = "registry.local/public/missing:1"
	const notFound = `failed to pull and unpack image "registry.local/public/missing:1": failed to resolve reference "registry.local/public/missing:1": registry.local/public/missing:1: not found`
	e.fake.Images().SetPullScript(missing, critest.PullScript{Err: status.Error(codes.NotFound, notFound)})
	_, err = e.rt.PullImage(ctx, cri.PullRequest{Image: missing})
	require.Error(t, err)
	assert.Equal(t, codes.NotFound, status.Code(err), "the status code passes through")
	reason, msg := cri.DescribePullError(err)
	assert.Equal(t, cri.PullReasonNotFound, reason)
	assert.Equal(t, notFound, msg, "the runtime's message passes through")

	// The runtime saw the request as sent, credentials included.
	calls := e.fake.Images().PullCalls()
	require.Len(t, calls, 2)
	assert.Equal(t, password, calls[0].Auth.GetPassword())
	assert.Equal(t, labels, calls[0].SandboxConfig.GetLabels())
	assert.Equal(t, cri.PullSandboxName, calls[0].SandboxConfig.GetMetadata().GetName())

	// Present through ImageStatus, also forwarded.
	info, present, err := e.rt.ImageStatus(ctx, "registry.local/private/app:1")
	require.NoError(t, err)
	assert.True(t, present)
	assert.Equal(t, ref, info.ID)

	recs, raw := readRecords(t, e.record)
	require.Len(t, recs, 2, "one line per PullImage, none for other calls")
	assert.NotContains(t, raw, password)
	assert.NotContains(t, raw, "robot", "no credential field at all")

	r := recs[0]
	assert.Equal(t, "registry.local/private/app:1", r["image"])
	assert.Equal(t, map[string]any{"kruise.io/image-pull-job": "job-a"}, r["sandboxLabels"])
	assert.Equal(t, map[string]any{"kruise.io/reason": "prewarm"}, r["sandboxAnnotations"])
	assert.Equal(t, true, r["hasAuth"])
	assert.Equal(t, true, r["hasSandboxConfig"])
	assert.Equal(t, "", r["error"])
	assert.Equal(t, "OK", r["code"])
	assert.Equal(t, ref, r["imageRef"])
	ts, err := time.Parse(time.RFC3339Nano, r["time"].(string))
	require.NoError(t, err)
	assert.False(t, ts.Before(before.Truncate(time.Microsecond)), "time %s is when the request arrived", ts)

	r = recs[1]
	assert.Equal(t, missing, r["image"])
	assert.Equal(t, false, r["hasAuth"])
	assert.Equal(t, map[string]any{}, r["sandboxLabels"])
	assert.Equal(t, notFound, r["error"])
	assert.Equal(t, "NotFound", r["code"])
	assert.NotContains(t, r, "imageRef")
}

func TestProxyCancelPassesThrough(t *testing.T) {
	e := newEnv(t)
	const img = "registry.local/huge:1"
	e.fake.Images().SetPullScript(img, critest.PullScript{Hang: true})
	arrived := make(chan struct{})
	e.fake.Images().OnCall(func(method, image string) {
		if method == "PullImage" && image == img {
			close(arrived)
		}
	})
	recorded := make(chan pullRecord, 1)
	e.proxy.rec.onWritten(func(r pullRecord) { recorded <- r })

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.rt.PullImage(ctx, cri.PullRequest{Image: img})
		errc <- err
	}()
	<-arrived
	cancel()
	assert.Equal(t, codes.Canceled, status.Code(<-errc))
	// The proxy cancelled its upstream call, so the hung pull ended and was
	// recorded.
	r := <-recorded
	assert.Equal(t, img, r.Image)
	assert.Equal(t, "Canceled", r.Code)
	assert.NotEmpty(t, r.Error)
}

func TestProxyForwardsStreamsAndMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-kruise-test", "t1")
	stream, err := runtimeapi.NewRuntimeServiceClient(e.conn).GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	require.NoError(t, err)
	var got []string
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, ev.GetContainerId())
	}
	assert.Equal(t, []string{"t1/a", "t1/b", "t1/c"}, got)
	hdr, err := stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"fake"}, hdr.Get("x-upstream"))
	assert.Equal(t, []string{"yes"}, stream.Trailer().Get("x-upstream-done"))

	// A call the runtime does not implement answers as the runtime does.
	_, err = runtimeapi.NewRuntimeServiceClient(e.conn).ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err))

	// Image service calls other than PullImage pass through unrecorded.
	fsInfo, err := runtimeapi.NewImageServiceClient(e.conn).ImageFsInfo(context.Background(), &runtimeapi.ImageFsInfoRequest{})
	require.NoError(t, err)
	assert.Len(t, fsInfo.GetImageFilesystems(), 1)
	recs, _ := readRecords(t, e.record)
	assert.Empty(t, recs)
}

func TestSocketModeAndStaleSocket(t *testing.T) {
	dir := critest.ShortTempDir(t)
	listen := filepath.Join(dir, "proxy.sock")

	// A socket left behind by a dead process.
	ln, err := net.Listen("unix", listen)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	_, err = os.Stat(listen)
	require.NoError(t, err, "stale socket left in place")

	p, err := newProxy(config{listen: listen, upstream: filepath.Join(dir, "none.sock")})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.serve() }()
	fi, err := os.Stat(listen)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSocket, fi.Mode().Type())
	assert.Equal(t, fs.FileMode(0o660), fi.Mode().Perm())

	// A live socket is not removed.
	_, err = newProxy(config{listen: listen, upstream: filepath.Join(dir, "none.sock")})
	require.ErrorContains(t, err, "in use")

	p.stop()
	require.NoError(t, <-served)
	_, err = os.Stat(listen)
	assert.ErrorIs(t, err, fs.ErrNotExist, "socket removed at stop")

	// Not a socket: refused.
	require.NoError(t, os.WriteFile(listen, []byte("x"), 0o600))
	_, err = newProxy(config{listen: listen, upstream: filepath.Join(dir, "none.sock")})
	require.ErrorContains(t, err, "not a socket")
}

func TestRunStopsOnSIGTERM(t *testing.T) {
	dir := critest.ShortTempDir(t)
	upstream := filepath.Join(dir, "containerd.sock")
	critest.Serve(t, upstream, critest.NewFakeRuntime())
	listen := filepath.Join(dir, "proxy.sock")

	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"--listen", listen, "--upstream", upstream}, func(*proxy) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run ended early: %v", err)
	}
	_, info, err := cri.Connect(context.Background(), listen, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "containerd", info.RuntimeName)

	// run catches SIGTERM from the moment ready is called.
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	require.NoError(t, <-done)
	_, err = os.Stat(listen)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestParseFlags(t *testing.T) {
	_, err := parseFlags([]string{"--listen", "/tmp/a.sock"})
	require.ErrorContains(t, err, "required")
	_, err = parseFlags([]string{"--listen", "/a", "--upstream", "/b", "extra"})
	require.ErrorContains(t, err, "unexpected arguments")
	c, err := parseFlags([]string{"--listen", "/a", "--upstream", "/b", "--record", "/c", "--hang-file", "/d"})
	require.NoError(t, err)
	assert.Equal(t, config{listen: "/a", upstream: "/b", record: "/c", hangFile: "/d"}, c)
}
