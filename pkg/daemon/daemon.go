package daemon

import (
	"context"
	"fmt"
	"net"
	"os"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/daemon/coexist"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
	"github.com/nodekruise/kruise/pkg/process/healthz"
)

const componentName = "kruise-daemon"

// Run runs the daemon until ctx is cancelled or it fails: it connects to the
// node's container runtime, watches its own Node and serves /healthz, /readyz
// and /metrics. It returns nil after a clean shutdown. It acts on the node
// (CRRs, image pulls, heartbeat) only while no other node daemon runs there,
// and returns an error wrapping a *coexist.ConflictError when one appears.
// Its parts are the components listed in components.go.
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
	// features are the feature gates; nil is features.DefaultFeatureGate,
	// which --feature-gates sets.
	features featuregate.FeatureGate
}

func run(ctx context.Context, o *Options, d deps) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting daemon", "node", o.NodeName)

	scheme := d.scheme
	if scheme == nil {
		var err error
		if scheme, err = kube.NewScheme(); err != nil {
			return err
		}
	}
	// One recorder (one queue, one correlation cache) serves every part of
	// the daemon; it is flushed once everything has stopped.
	rec := recorder.New(ctx, recorder.Options{Sink: d.client.EventSink(), Scheme: scheme,
		Component: componentName, Host: o.NodeName})
	defer rec.Stop()
	reg := healthz.NewRegistry()
	e := &env{deps: d, opts: o, recorder: rec, metrics: reg}
	parts := newLoop(components, e)

	srv := healthz.New(healthz.Options{
		Addr:     o.Addr,
		Gatherer: healthz.Gatherers(reg),
		Healthz:  []healthz.Checker{healthz.Ping},
		Readyz:   parts.readyz(),
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
	g.Go(func() error { return parts.run(gctx, e) })
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
