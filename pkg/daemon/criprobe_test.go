package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

// stubRuntime is an in-memory cri.Runtime. The embedded nil interface
// supplies the container calls the prober never makes (they would panic).
type stubRuntime struct {
	cri.Runtime
	info cri.VersionInfo
	err  error
}

func (s *stubRuntime) Version(context.Context) (cri.VersionInfo, error) { return s.info, s.err }
func (s *stubRuntime) Endpoint() string                                 { return "/run/containerd/containerd.sock" }
func (s *stubRuntime) Close() error                                     { return nil }

func TestCRIProberReadiness(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	p := newCRIProber(10*time.Second, 3*time.Second, clk)
	info := cri.VersionInfo{RuntimeName: "containerd", RuntimeVersion: "1.6.20", RuntimeAPIVersion: "v1"}
	rt := &stubRuntime{info: info}

	require.ErrorContains(t, p.Check(nil), "not connected")
	assert.Empty(t, p.Detail())

	p.connected(rt, info)
	require.NoError(t, p.Check(nil))
	assert.Equal(t, "runtime=containerd version=1.6.20 criVersion=v1 endpoint=/run/containerd/containerd.sock", p.Detail())

	// No probe for longer than two intervals plus a timeout: stale.
	clk.SetTime(clk.Now().Add(24 * time.Second))
	require.ErrorContains(t, p.Check(nil), "last answered 24s ago")
	p.probe(ctx)
	require.NoError(t, p.Check(nil))

	rt.err = errors.New("connection refused")
	p.probe(ctx)
	require.ErrorContains(t, p.Check(nil), "does not answer: connection refused")

	rt.err = nil
	p.probe(ctx)
	require.NoError(t, p.Check(nil))

	// A failure seen while shutting down is not recorded against the runtime.
	rt.err = context.Canceled
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	p.probe(cancelled)
	require.NoError(t, p.Check(nil))
}

// A runtime that takes calls and never answers: each probe ends at the
// probe's own deadline (not the 2-minute call timeout), and readiness says
// the runtime does not answer until it answers again.
func TestCRIProberHungRuntime(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	sock := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	fake := critest.NewFakeRuntime()
	critest.Serve(t, sock, fake)
	rt, info, err := cri.Discover(ctx, cri.DiscoverOptions{Endpoint: sock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })

	const probeTimeout = 200 * time.Millisecond
	clk := clocktesting.NewFakePassiveClock(time.Now())
	p := newCRIProber(10*time.Second, probeTimeout, clk)
	p.connected(rt, info)
	require.NoError(t, p.Check(nil))

	for _, m := range []string{"Version", "ListContainers", "ContainerStatus", "ImageStatus"} {
		fake.HangCall(m, true)
	}
	t.Cleanup(func() { fake.Hang(false) })
	start := time.Now()
	p.probe(ctx)
	assert.Less(t, time.Since(start), probeTimeout+2*time.Second, "the probe has its own short deadline")
	err = p.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not answer")
	assert.Contains(t, err.Error(), "DeadlineExceeded")

	fake.HangCall("Version", false)
	p.probe(ctx)
	require.NoError(t, p.Check(nil))
}
