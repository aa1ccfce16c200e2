package daemon

import (
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/pkg/daemon/heartbeat"
	"github.com/nodekruise/kruise/pkg/server"
)

const componentName = "kruise-daemon"

// runtimeRetryInterval spaces start-up attempts to reach the runtime.
const runtimeRetryInterval = 2 * time.Second

// Run runs the daemon until ctx is cancelled or it fails: it connects to the
// node's container runtime, watches its own Node and serves /healthz, /readyz
// and /metrics. It returns nil after a clean shutdown.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	_, client, err := o.Kube.Client(componentName)
	if err != nil {
		return err
	}
	return run(ctx, o, deps{client: client, clock: clock.RealClock{}, heartbeatClock: clock.RealClock{}})
}

// deps are what Run builds from the options; tests substitute fakes.
type deps struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	// heartbeatClock times the node heartbeat; nil turns the heartbeat off.
	heartbeatClock clock.Clock
	// listening, if set, is told the bound health/metrics address.
	listening func(net.Addr)
}

func run(ctx context.Context, o *Options, d deps) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting daemon", "node", o.NodeName)

	prober := newCRIProber(o.CRIProbeInterval, o.CRIProbeTimeout, d.clock)
	nodes, err := newNodeWatch(d.client, o.NodeName, logger)
	if err != nil {
		return err
	}

	reg := server.NewRegistry()
	criMetrics := cri.NewMetrics()
	for _, c := range append(prober.collectors(), criMetrics.Collectors()...) {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering CRI metrics: %w", err)
		}
	}

	srv := server.New(server.Options{
		Addr:     o.Addr,
		Gatherer: server.Gatherers(reg),
		Healthz:  []server.Checker{server.Ping},
		Readyz:   []server.Checker{prober, nodes},
	})
	addr, err := srv.Listen()
	if err != nil {
		return err
	}
	if d.listening != nil {
		d.listening(addr)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx) })
	if d.heartbeatClock != nil {
		// The heartbeat tells kruise-controller this node has a live
		// daemon; its failures are logged and never stop the daemon.
		hb := heartbeat.New(d.client, o.NodeName, o.Namespace, d.heartbeatClock)
		g.Go(func() error {
			hb.Run(gctx)
			return nil
		})
	}
	g.Go(func() error {
		// Shutdown waits for the informers, which stop when their context
		// ends: cancel first (defers run last-in, first-out).
		infCtx, cancelInformers := context.WithCancel(gctx)
		defer nodes.factory.Shutdown()
		defer cancelInformers()
		nodes.factory.Start(infCtx.Done())

		rt, info, err := connectRuntime(gctx, o, criMetrics)
		if err != nil {
			return err
		}
		if rt == nil {
			return nil // cancelled while waiting
		}
		defer func() {
			if err := rt.Close(); err != nil {
				logger.Error(err, "Closing the CRI connection")
			}
		}()
		logger.Info("Connected to container runtime", "runtime", info.RuntimeName, "version", info.RuntimeVersion,
			"criVersion", info.RuntimeAPIVersion, "endpoint", rt.Endpoint())
		prober.connected(rt, info)
		g.Go(func() error {
			prober.run(gctx)
			return nil
		})

		logger.Info("Waiting for the node informer to sync", "node", o.NodeName)
		if err := wait.PollUntilContextCancel(gctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			return nodes.informer.HasSynced(), nil
		}); err != nil {
			return nil // cancelled before the API server answered
		}
		if err := nodes.Check(nil); err != nil {
			logger.Info("Node informer synced but the node is not ready for us", "reason", err.Error())
		} else {
			logger.Info("Node informer synced", "node", o.NodeName)
		}

		<-gctx.Done()
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	logger.Info("Daemon stopped")
	return nil
}

// connectRuntime discovers the runtime, retrying until RuntimeWait has
// passed. It returns a nil runtime and no error when ctx is cancelled.
func connectRuntime(ctx context.Context, o *Options, m *cri.Metrics) (cri.Runtime, cri.VersionInfo, error) {
	logger := klog.FromContext(ctx)
	dopts := cri.DiscoverOptions{Endpoint: o.RuntimeEndpoint, HostRunDir: o.HostRunDir, ProbeTimeout: o.CRIProbeTimeout, Metrics: m}
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
