package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/pkg/daemon/coexist"
	"github.com/nodekruise/kruise/pkg/daemon/heartbeat"
	"github.com/nodekruise/kruise/pkg/daemon/imagepull"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
	"github.com/nodekruise/kruise/pkg/daemon/recreate"
	"github.com/nodekruise/kruise/pkg/server"
)

const componentName = "kruise-daemon"

// runtimeRetryInterval spaces start-up attempts to reach the runtime.
const runtimeRetryInterval = 2 * time.Second

// Run runs the daemon until ctx is cancelled or it fails: it connects to the
// node's container runtime, watches its own Node and serves /healthz, /readyz
// and /metrics. It returns nil after a clean shutdown. It acts on the node
// (CRRs, image pulls, heartbeat) only while no other node daemon runs there,
// and returns a *coexist.ConflictError when one appears.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	cfg, err := o.Kube.RESTConfig(componentName)
	if err != nil {
		return err
	}
	// One connection pool for all the daemon's clients, as a clientset
	// would share it.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("creating the HTTP client: %w", err)
	}
	client, err := kube.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return err
	}
	return run(ctx, o, deps{client: client, kruiseClient: client, scheme: client.Scheme(),
		clock: clock.RealClock{}, heartbeatClock: clock.RealClock{}, pod: ownPod(o)})
}

// deps are what Run builds from the options; tests substitute fakes.
type deps struct {
	client kube.Interface
	// kruiseClient reaches the apps.kruise.io kinds; nil turns the CRR
	// executor and the image puller off.
	kruiseClient kube.Kruise
	// scheme knows the kinds the daemon records Events on (Nodes, Pods,
	// CRRs, NodeImages); nil builds one.
	scheme *runtime.Scheme
	clock  clock.PassiveClock
	// heartbeatClock times the node heartbeat; nil turns the heartbeat off.
	heartbeatClock clock.Clock
	// listening, if set, is told the bound health/metrics address.
	listening func(net.Addr)
	// pod is this daemon's own pod ($POD_NAMESPACE/$POD_NAME); an empty
	// name when unknown.
	pod types.NamespacedName
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

	scheme := d.scheme
	if scheme == nil {
		if scheme, err = kube.NewScheme(); err != nil {
			return err
		}
	}
	// One recorder (one queue, one correlation cache) serves every part of
	// the daemon; it is flushed once everything has stopped.
	rec := recorder.New(ctx, recorder.Options{Sink: d.client.EventSink(), Scheme: scheme,
		Component: componentName, Host: o.NodeName})
	defer rec.Stop()
	guard := coexist.New(coexist.Config{Node: o.NodeName, Namespace: d.pod.Namespace, Name: d.pod.Name, Recorder: rec})

	readyz := []server.Checker{prober, nodes, guard}
	crrMetrics := recreate.NewMetrics()
	crrReady := server.NewFlag("crr", "CRR informers have not synced")
	pullMetrics := imagepull.NewMetrics()
	pullReady := server.NewFlag("imagepull", "NodeImage and pull-secret informers have not synced")
	if d.kruiseClient != nil {
		for _, c := range append(crrMetrics.Collectors(), pullMetrics.Collectors()...) {
			if err := reg.Register(c); err != nil {
				return fmt.Errorf("registering CRR and image pull metrics: %w", err)
			}
		}
		readyz = append(readyz, crrReady, pullReady)
	}

	srv := server.New(server.Options{
		Addr:     o.Addr,
		Gatherer: server.Gatherers(reg),
		Healthz:  []server.Checker{server.Ping},
		Readyz:   readyz,
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
	g.Go(func() error {
		// Shutdown waits for the informers, which stop when their context
		// ends: cancel first (defers run last-in, first-out).
		infCtx, cancelInformers := context.WithCancel(gctx)
		defer nodes.set.shutdown()
		defer cancelInformers()
		nodes.set.start(infCtx.Done())

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

		// The CRR executor's pod informer (this node's pods) also tells
		// whether another node daemon runs here; without the executor the
		// guard gets an informer of its own.
		var crrs *crrWatch
		if d.kruiseClient != nil {
			if crrs, err = newCRRWatch(d.client, d.kruiseClient, o.NodeName, rt, crrMetrics, rec); err != nil {
				return err
			}
			if err := guard.Watch(gctx, crrs.pods); err != nil {
				return err
			}
		} else {
			pods := nodePodInformer(d.client, o.NodeName)
			if err := guard.Watch(gctx, pods); err != nil {
				return err
			}
			podSet := newInformerSet(pods)
			podCtx, cancelPods := context.WithCancel(gctx)
			defer podSet.shutdown()
			defer cancelPods()
			podSet.start(podCtx.Done())
		}
		if crrs != nil {
			crrCtx, cancelCRR := context.WithCancel(gctx)
			defer crrs.shutdown()
			defer cancelCRR()
			crrs.start(crrCtx.Done())
			logger.Info("Waiting for the CRR informers to sync", "node", o.NodeName)
			if err := wait.PollUntilContextCancel(gctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
				return crrs.synced(), nil
			}); err != nil {
				return nil // cancelled before the API server answered
			}
			crrReady.Set(true)
		}

		// Nothing below acts on the node until no other node daemon runs
		// on it; if one appears later, the daemon stops (see package
		// coexist).
		if err := guard.WaitAlone(gctx); err != nil {
			return nil // cancelled
		}
		g.Go(func() error { return guard.StopOnConflict(gctx) })
		if d.heartbeatClock != nil {
			// The heartbeat tells kruise-controller this node has a live
			// daemon; its failures are logged and never stop the daemon.
			hb := heartbeat.New(d.client, o.NodeName, o.Namespace, d.heartbeatClock)
			g.Go(func() error {
				hb.Run(gctx)
				return nil
			})
		}

		if crrs != nil {
			logger.Info("CRR informers synced; starting the CRR executor", "workers", o.CRRWorkers)
			g.Go(func() error { return crrs.executor.Run(gctx, o.CRRWorkers) })

			pulls, err := newPullWatch(o, d.client, d.kruiseClient, rt, pullMetrics, rec)
			if err != nil {
				return err
			}
			pullCtx, cancelPulls := context.WithCancel(gctx)
			defer pulls.shutdown()
			defer cancelPulls()
			pulls.start(pullCtx.Done())
			if err := wait.PollUntilContextCancel(gctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
				return pulls.synced(), nil
			}); err != nil {
				return nil // cancelled before the API server answered
			}
			pullReady.Set(true)
			logger.Info("NodeImage informer synced; starting the image puller", "maxConcurrentPulls", o.MaxConcurrentPulls)
			g.Go(func() error { return pulls.puller.Run(gctx) })
			if pulls.reloader != nil {
				g.Go(func() error {
					pulls.reloader.Run(gctx, clock.RealClock{}, o.CredentialProviderReloadPeriod)
					return nil
				})
			}
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

// ownPod names the daemon's own pod from the downward API: $POD_NAME in
// $POD_NAMESPACE (else --namespace).
func ownPod(o *Options) types.NamespacedName {
	ns := os.Getenv(PodNamespaceEnv)
	if ns == "" {
		ns = o.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: os.Getenv(coexist.PodNameEnv)}
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
