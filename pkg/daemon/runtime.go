package daemon

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// runtimeRetryInterval spaces start-up attempts to reach the runtime.
const runtimeRetryInterval = 2 * time.Second

// buildCRI connects to the node's container runtime and keeps asking it for
// its version, which backs the cri check and kruise_daemon_cri_up.
func buildCRI(ctx context.Context, e *env) (*component, error) {
	logger := klog.FromContext(ctx)
	o := e.opts
	prober := newCRIProber(o.CRIProbeInterval, o.CRIProbeTimeout, e.clock)
	criMetrics := cri.NewMetrics()
	if err := e.register(append(prober.collectors(), criMetrics.Collectors()...)...); err != nil {
		return nil, err
	}
	rt, info, err := connectRuntime(ctx, o, criMetrics)
	if err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, ctx.Err() // cancelled while waiting
	}
	logger.Info("Connected to container runtime", "runtime", info.RuntimeName, "version", info.RuntimeVersion,
		"criVersion", info.RuntimeAPIVersion, "endpoint", rt.Endpoint())
	prober.connected(rt, info)
	e.runtime = rt
	return &component{
		check: prober,
		run: func(ctx context.Context) error {
			prober.run(ctx)
			return nil
		},
		close: func() {
			if err := rt.Close(); err != nil {
				logger.Error(err, "Closing the CRI connection")
			}
		},
	}, nil
}

// connectRuntime discovers the runtime, retrying until RuntimeWait has
// passed. It returns a nil runtime and no error when ctx is cancelled.
func connectRuntime(ctx context.Context, o *Options, m *cri.Metrics) (cri.Runtime, cri.VersionInfo, error) {
	logger := klog.FromContext(ctx)
	dopts := cri.DiscoverOptions{Endpoint: o.RuntimeEndpoint, HostRunDir: o.HostRunDir, ProbeTimeout: o.CRIProbeTimeout,
		CallTimeout: o.RuntimeRequestTimeout, Metrics: m}
	deadline := time.Now().Add(o.RuntimeWait)
	for attempt := 1; ; attempt++ {
		rt, info, err := cri.Discover(ctx, dopts)
		if err == nil {
			return rt, info, nil
		}
		if ctx.Err() != nil {
			return nil, cri.VersionInfo{}, nil
		}
		if time.Now().Add(runtimeRetryInterval).After(deadline) {
			return nil, cri.VersionInfo{}, fmt.Errorf("connecting to the container runtime (gave up after %d attempts in %s): %w",
				attempt, o.RuntimeWait, err)
		}
		logger.Info("Container runtime not reachable yet, retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, cri.VersionInfo{}, nil
		case <-time.After(runtimeRetryInterval):
		}
	}
}
