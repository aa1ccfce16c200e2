package cri_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/test/unit/metrictest"
)

const (
	durMetric = "kruise_daemon_cri_request_duration_seconds"
	errMetric = "kruise_daemon_cri_request_errors_total"
)

func TestPullImageAlwaysSendsSandboxConfig(t *testing.T) {
	env := newFakeEnv(t)
	ctx := context.Background()
	labels := map[string]string{"kruise.io/image-pull-job": "job-a", "app": "web"}
	annotations := map[string]string{"kruise.io/pull-policy": "Always"}

	ref, err := env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/app:1", SandboxLabels: labels, SandboxAnnotations: annotations})
	require.NoError(t, err)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, ref)
	_, err = env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/app:2"})
	require.NoError(t, err)

	calls := env.fake.Images().PullCalls()
	require.Len(t, calls, 2)
	for i, c := range calls {
		sc := c.SandboxConfig
		require.NotNil(t, sc, "call %d: sandbox config is never nil", i)
		require.NotNil(t, sc.GetMetadata(), "call %d", i)
		assert.Equal(t, cri.PullSandboxName, sc.GetMetadata().GetName())
		assert.Equal(t, cri.PullSandboxNamespace, sc.GetMetadata().GetNamespace())
		assert.Equal(t, cri.PullSandboxUID, sc.GetMetadata().GetUid())
		assert.Zero(t, c.Deadline, "a pull gets no deadline of its own")
	}
	assert.Equal(t, "registry.local/app:1", calls[0].Image)
	assert.Equal(t, labels, calls[0].SandboxConfig.GetLabels())
	assert.Equal(t, annotations, calls[0].SandboxConfig.GetAnnotations())
	assert.Equal(t, "registry.local/app:2", calls[1].Image)
	assert.Empty(t, calls[1].SandboxConfig.GetLabels())
	assert.Empty(t, calls[1].SandboxConfig.GetAnnotations())
}

func TestPullImageAuth(t *testing.T) {
	env := newFakeEnv(t)
	ctx := context.Background()
	auth := &cri.Auth{
		Username: "robot", Password: "s3cret", Auth: "cm9ib3Q6czNjcmV0", ServerAddress: "registry.local",
		IdentityToken: "id-token", RegistryToken: "reg-token",
	}
	_, err := env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/private:1", Auth: auth})
	require.NoError(t, err)
	_, err = env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/public:1"})
	require.NoError(t, err)

	calls := env.fake.Images().PullCalls()
	require.Len(t, calls, 2)
	got := calls[0].Auth
	require.NotNil(t, got)
	assert.Equal(t, *auth, cri.Auth{
		Username: got.GetUsername(), Password: got.GetPassword(), Auth: got.GetAuth(), ServerAddress: got.GetServerAddress(),
		IdentityToken: got.GetIdentityToken(), RegistryToken: got.GetRegistryToken(),
	})
	assert.Nil(t, calls[1].Auth, "a nil Auth pulls anonymously")
}

func TestPullImageErrorKeepsStatusWithoutCredentials(t *testing.T) {
	env := newFakeEnv(t)
	const img = "registry.local/private:1"
	env.fake.Images().SetPullScript(img, critest.PullScript{Err: status.Errorf(codes.Unknown,
		`failed to pull and unpack image "%s": failed to resolve reference "%s": unexpected status from HEAD request to https://registry.local/v2/private/manifests/1: 401 Unauthorized`, img, img)})

	_, err := env.rt.PullImage(context.Background(), cri.PullRequest{Image: img, Auth: &cri.Auth{Username: "robot", Password: "s3cret"}})
	require.Error(t, err)
	assert.Equal(t, codes.Unknown, status.Code(err))
	assert.NotContains(t, err.Error(), "s3cret")
	reason, msg := cri.DescribePullError(err)
	assert.Equal(t, cri.PullReasonUnauthorized, reason)
	assert.Regexp(t, `^failed to pull and unpack image "registry.local/private:1": .*: 401 Unauthorized$`, msg, "the runtime's words")
	_, present, err := env.rt.ImageStatus(context.Background(), img)
	require.NoError(t, err)
	assert.False(t, present, "a failed pull stores nothing")
}

func TestPullImageEmptyReference(t *testing.T) {
	env := newFakeEnv(t)
	_, err := env.rt.PullImage(context.Background(), cri.PullRequest{})
	require.ErrorIs(t, err, cri.ErrEmptyImage)
	assert.Empty(t, env.fake.Images().PullCalls(), "nothing is sent")
}

func TestImageStatus(t *testing.T) {
	env := newFakeEnv(t)
	ctx := context.Background()
	env.fake.Images().AddImage(critest.Image{
		ID: "sha256:aaaa", RepoTags: []string{"registry.local/app:1"}, RepoDigests: []string{"registry.local/app@sha256:bbbb"}, Size: 4242,
	})

	for _, ref := range []string{"registry.local/app:1", "registry.local/app@sha256:bbbb", "sha256:aaaa"} {
		info, present, err := env.rt.ImageStatus(ctx, ref)
		require.NoError(t, err, ref)
		assert.True(t, present, ref)
		assert.Equal(t, cri.ImageInfo{
			ID: "sha256:aaaa", RepoTags: []string{"registry.local/app:1"}, RepoDigests: []string{"registry.local/app@sha256:bbbb"}, Size: 4242,
		}, info, ref)
	}

	info, present, err := env.rt.ImageStatus(ctx, "registry.local/app:2")
	require.NoError(t, err)
	assert.False(t, present)
	assert.Zero(t, info)

	env.fake.Images().SetCallError("ImageStatus", status.Error(codes.Internal, "metadata store broken"))
	_, present, err = env.rt.ImageStatus(ctx, "registry.local/app:1")
	require.Error(t, err)
	assert.False(t, present)
	assert.Equal(t, codes.Internal, status.Code(err))

	env.fake.Images().SetCallError("ImageStatus", status.Error(codes.NotFound, "image not known"))
	_, present, err = env.rt.ImageStatus(ctx, "registry.local/app:1")
	require.NoError(t, err, "NotFound is an absent image")
	assert.False(t, present)
}

func TestPulledImageIsPresentAndRemovable(t *testing.T) {
	env := newFakeEnv(t)
	ctx := context.Background()
	env.fake.Images().SetPullScript("registry.local/app:1", critest.PullScript{ID: "sha256:cafe", Size: 7})
	ref, err := env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/app:1"})
	require.NoError(t, err)
	assert.Equal(t, "sha256:cafe", ref)

	info, present, err := env.rt.ImageStatus(ctx, "registry.local/app:1")
	require.NoError(t, err)
	require.True(t, present)
	assert.Equal(t, cri.ImageInfo{ID: "sha256:cafe", RepoTags: []string{"registry.local/app:1"}, Size: 7}, info)

	require.NoError(t, env.rt.RemoveImage(ctx, "registry.local/app:1"))
	_, present, err = env.rt.ImageStatus(ctx, "registry.local/app:1")
	require.NoError(t, err)
	assert.False(t, present)
}

func TestRemoveImageAbsentIsNotAnError(t *testing.T) {
	env := newFakeEnv(t)
	require.NoError(t, env.rt.RemoveImage(context.Background(), "registry.local/never-pulled:1"))
	assert.Equal(t, 1.0, metrictest.CounterOrZero(t, env.reg, errMetric, map[string]string{"method": "RemoveImage", "code": "NotFound"}),
		"the fake answered NotFound, which the client swallowed")

	env.fake.Images().SetCallError("RemoveImage", status.Error(codes.FailedPrecondition, "image is in use by container abc"))
	err := env.rt.RemoveImage(context.Background(), "registry.local/busy:1")
	require.Error(t, err)
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
}

func TestPullImageBlockedIsCancelledByContext(t *testing.T) {
	env := newFakeEnv(t)
	const img = "registry.local/huge:1"
	env.fake.Images().SetPullScript(img, critest.PullScript{Hang: true})
	arrived := make(chan struct{})
	env.fake.Images().OnCall(func(method, image string) {
		if method == "PullImage" && image == img {
			close(arrived)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := env.rt.PullImage(ctx, cri.PullRequest{Image: img})
		errc <- err
	}()
	<-arrived
	select {
	case err := <-errc:
		t.Fatalf("pull returned before cancellation: %v", err)
	default:
	}
	cancel()
	err := <-errc
	require.Error(t, err)
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.ErrorContains(t, err, "CRI PullImage "+img)
	reason, _ := cri.DescribePullError(err)
	assert.Equal(t, cri.PullReasonCancelled, reason)
	_, present, err := env.rt.ImageStatus(context.Background(), img)
	require.NoError(t, err)
	assert.False(t, present)
}

func TestPullImageReleasedAfterDeadline(t *testing.T) {
	env := newFakeEnv(t)
	const img = "registry.local/slow:1"
	release := make(chan struct{})
	env.fake.Images().SetPullScript(img, critest.PullScript{Release: release})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := env.rt.PullImage(ctx, cri.PullRequest{Image: img})
	require.Error(t, err)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	reason, _ := cri.DescribePullError(err)
	assert.Equal(t, cri.PullReasonTimeout, reason)

	// Once released, the same reference pulls.
	close(release)
	_, err = env.rt.PullImage(context.Background(), cri.PullRequest{Image: img})
	require.NoError(t, err)
	calls := env.fake.Images().PullCalls()
	require.Len(t, calls, 2)
	assert.Positive(t, calls[0].Deadline, "the caller's deadline reached the runtime")
}

func TestImageCallsAreMetered(t *testing.T) {
	env := newFakeEnv(t)
	ctx := context.Background()
	env.fake.Images().SetPullScript("registry.local/missing:1", critest.PullScript{Err: status.Error(codes.NotFound,
		`failed to pull and unpack image "registry.local/missing:1": failed to resolve reference "registry.local/missing:1": registry.local/missing:1: not found`)})

	_, err := env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/app:1"})
	require.NoError(t, err)
	_, err = env.rt.PullImage(ctx, cri.PullRequest{Image: "registry.local/missing:1"})
	require.Error(t, err)
	_, _, err = env.rt.ImageStatus(ctx, "registry.local/app:1")
	require.NoError(t, err)
	require.NoError(t, env.rt.RemoveImage(ctx, "registry.local/app:1"))

	assert.EqualValues(t, 2, metrictest.HistogramCount(t, env.reg, durMetric, map[string]string{"method": "PullImage"}))
	assert.EqualValues(t, 1, metrictest.HistogramCount(t, env.reg, durMetric, map[string]string{"method": "ImageStatus"}))
	assert.EqualValues(t, 1, metrictest.HistogramCount(t, env.reg, durMetric, map[string]string{"method": "RemoveImage"}))
	assert.Equal(t, 1.0, metrictest.CounterOrZero(t, env.reg, errMetric, map[string]string{"method": "PullImage", "code": "NotFound"}))
	assert.Nil(t, metrictest.Find(t, env.reg, errMetric, map[string]string{"method": "RemoveImage", "code": "NotFound"}), "the image was there")
}

// localContainerdSocket is the containerd of the local test cluster
// (hack/cluster.sh); localRegistry the test registry (hack/tools/registry).
const (
	localContainerdSocket = "/var/tmp/kruise-local/containerd/containerd.sock"
	localRegistry         = "127.0.0.1:5000"
)

// TestRealRuntimeImages pulls from the local test registry through the
// local cluster's containerd, when both are there. It removes nothing it
// did not create: the pulled image may be in use by the cluster.
func TestRealRuntimeImages(t *testing.T) {
	fi, err := os.Stat(localContainerdSocket)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Skipf("no containerd socket at %s", localContainerdSocket)
	}
	m := cri.NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, info, err := cri.Discover(ctx, cri.DiscoverOptions{Endpoint: localContainerdSocket, Metrics: m})
	if err != nil {
		t.Skipf("containerd at %s does not answer: %v", localContainerdSocket, err)
	}
	defer rt.Close()
	t.Logf("runtime %s %s (CRI %s)", info.RuntimeName, info.RuntimeVersion, info.RuntimeAPIVersion)

	// Works without the registry.
	_, present, err := rt.ImageStatus(ctx, "127.0.0.1:1/kruise/does-not-exist:never")
	require.NoError(t, err)
	assert.False(t, present)
	require.NoError(t, rt.RemoveImage(ctx, "127.0.0.1:1/kruise/does-not-exist:never"))

	if !registryReachable(ctx) {
		t.Skipf("test registry %s not reachable", localRegistry)
	}
	const img = localRegistry + "/public/busybox:1.35"
	ref, err := rt.PullImage(ctx, cri.PullRequest{
		Image:              img,
		SandboxLabels:      map[string]string{"app.kubernetes.io/managed-by": "kruise-test"},
		SandboxAnnotations: map[string]string{"kruise.io/test": "TestRealRuntimeImages"},
	})
	require.NoError(t, err)
	t.Logf("pulled %s as %s", img, ref)
	st, present, err := rt.ImageStatus(ctx, img)
	require.NoError(t, err)
	require.True(t, present)
	assert.Equal(t, ref, st.ID)
	assert.Contains(t, st.RepoTags, img)
	assert.Positive(t, st.Size)

	_, err = rt.PullImage(ctx, cri.PullRequest{Image: localRegistry + "/public/kruise-does-not-exist:never"})
	require.Error(t, err)
	reason, msg := cri.DescribePullError(err)
	t.Logf("missing image: reason=%s message=%s (raw: %v)", reason, msg, err)
	assert.Equal(t, cri.PullReasonNotFound, reason)
	assert.EqualValues(t, 2, metrictest.HistogramCount(t, reg, durMetric, map[string]string{"method": "PullImage"}))
}

func registryReachable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+localRegistry+"/v2/", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	// 401 still means a registry answers.
	return resp.StatusCode < 500 && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}
