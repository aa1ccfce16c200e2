package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/cri"
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
