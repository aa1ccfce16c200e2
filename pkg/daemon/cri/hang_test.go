package cri_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

// A runtime that accepts a call and never answers: every call without a
// deadline of its own ends at the call timeout with DeadlineExceeded and
// says the runtime did not answer, instead of holding its caller for ever.
func TestCallsToAHungRuntimeEndAtTheCallTimeout(t *testing.T) {
	const callTimeout = 300 * time.Millisecond
	calls := []struct {
		method string
		call   func(ctx context.Context, rt cri.Runtime) error
	}{
		{"Version", func(ctx context.Context, rt cri.Runtime) error { _, err := rt.Version(ctx); return err }},
		{"ListContainers", func(ctx context.Context, rt cri.Runtime) error { _, err := rt.PodContainers(ctx, "uid-a"); return err }},
		{"ContainerStatus", func(ctx context.Context, rt cri.Runtime) error { _, err := rt.PodContainers(ctx, "uid-a"); return err }},
		{"ExecSync", func(ctx context.Context, rt cri.Runtime) error {
			_, err := rt.ExecSync(ctx, "app-0", []string{"true"}, 0)
			return err
		}},
		{"ImageStatus", func(ctx context.Context, rt cri.Runtime) error {
			_, _, err := rt.ImageStatus(ctx, "busybox")
			return err
		}},
		{"RemoveImage", func(ctx context.Context, rt cri.Runtime) error { return rt.RemoveImage(ctx, "busybox") }},
	}
	for _, tc := range calls {
		t.Run(tc.method, func(t *testing.T) {
			path := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
			f := critest.NewFakeRuntime()
			f.AddContainer(podContainer("app-0", "app", 0, running))
			critest.Serve(t, path, f)
			rt, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: path, ProbeTimeout: probeTimeout, CallTimeout: callTimeout})
			require.NoError(t, err)
			t.Cleanup(func() { _ = rt.Close() })
			f.HangCall(tc.method, true)
			// Let a call the fix failed to bound end with the test.
			t.Cleanup(func() { f.HangCall(tc.method, false) })

			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- tc.call(context.Background(), rt) }()
			select {
			case err = <-done:
			case <-time.After(callTimeout + 10*time.Second):
				t.Fatalf("%s to a hung runtime did not return", tc.method)
			}
			took := time.Since(start)
			require.Error(t, err)
			assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
			assert.Contains(t, err.Error(), "the runtime did not answer within 300ms")
			assert.GreaterOrEqual(t, took, callTimeout)
			assert.Less(t, took, callTimeout+2*time.Second)
		})
	}
}

// The caller's earlier deadline wins, and its expiry is not blamed on the
// runtime.
func TestCallerDeadlineWinsOverTheCallTimeout(t *testing.T) {
	path := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	f := critest.NewFakeRuntime()
	critest.Serve(t, path, f)
	rt, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: path, ProbeTimeout: probeTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	f.HangCall("ListContainers", true)
	t.Cleanup(func() { f.HangCall("ListContainers", false) })

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = rt.PodContainers(ctx, "uid-a")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.NotContains(t, err.Error(), "did not answer within")
}
