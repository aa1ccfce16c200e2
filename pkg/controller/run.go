package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/healthz"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

const componentName = "kruise-controller"

// webhookQPS is the request rate of the admission handlers' reads.
const webhookQPS = 50

// migrationQPS is the request rate of the storage version migration (one patch per object).
const migrationQPS = 20

// apiServerPollInterval spaces the start-up checks that the API server answers.
var apiServerPollInterval = 2 * time.Second

// Run runs the controller process until ctx is cancelled (returns nil) or it
// fails. Losing leadership stops the controllers and campaigns again.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	cfg, client, err := newClient(&o.Kube, componentName)
	if err != nil {
		return err
	}
	// Lease calls get their own client with a timeout below the renew
	// deadline, so one hung request cannot eat the whole deadline.
	leCfg := rest.CopyConfig(cfg)
	leCfg.Timeout = o.RenewDeadline / 2
	leCfg = rest.AddUserAgent(leCfg, "leader-election")
	leClient, err := coordinationv1.NewForConfig(leCfg)
	if err != nil {
		return fmt.Errorf("creating leader-election client: %w", err)
	}
	identity, err := Identity()
	if err != nil {
		return err
	}
	kruiseClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating kruise client: %w", err)
	}
	d := deps{client: client, kruiseClient: kruiseClient, leases: leClient, identity: identity, builders: builders}
	// Admission reads (a CRR's pod, the SidecarSets) get clients of their own: behind the
	// controllers' writes in one rate limit, an answer could miss the API server's timeout.
	whCfg := limitedConfig(cfg, "webhook", webhookQPS)
	if d.webhookClient, err = kubernetes.NewForConfig(whCfg); err != nil {
		return fmt.Errorf("creating the webhook client: %w", err)
	}
	if d.webhookKruiseClient, err = versioned.NewForConfig(whCfg); err != nil {
		return fmt.Errorf("creating the webhook kruise client: %w", err)
	}
	if d.webhookMetadata, err = metadata.NewForConfig(whCfg); err != nil {
		return fmt.Errorf("creating the webhook metadata client: %w", err)
	}
	if d.webhookDynamic, err = dynamic.NewForConfig(whCfg); err != nil {
		return fmt.Errorf("creating the webhook dynamic client: %w", err)
	}
	if d.crdClient, err = newCRDClient(cfg); err != nil {
		return fmt.Errorf("creating apiextensions client: %w", err)
	}
	// The storage version migration patches every object of a kind once: a client of its own,
	// so that it never takes the controllers' share of requests.
	if d.migrationClient, err = metadata.NewForConfig(limitedConfig(cfg, "storage-version-migration", migrationQPS)); err != nil {
		return fmt.Errorf("creating the storage version migration client: %w", err)
	}
	return run(ctx, o, d)
}

// limitedConfig is cfg with a rate limit of its own, qps with a burst of twice that, for the
// user agent's suffix agent.
func limitedConfig(cfg *rest.Config, agent string, qps float32) *rest.Config {
	out := rest.AddUserAgent(rest.CopyConfig(cfg), agent)
	out.QPS, out.Burst = qps, 2*int(qps)
	return out
}

// deps are what Run builds from the options; tests substitute fakes.
type deps struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	leases       coordinationv1.LeasesGetter
	identity     string
	builders     []Entry
	// listening, if set, is told the bound health/metrics address.
	listening func(net.Addr)

	// crdClient writes the conversion webhooks' caBundles (--webhook-enabled) and reads the
	// CRDs for the storage version migration; migrationClient rewrites their objects.
	crdClient       apiextensionsclient.Interface
	migrationClient metadata.Interface
	// webhookClient and webhookKruiseClient are the admission handlers' (nil: client and
	// kruiseClient, in tests).
	webhookClient       kubernetes.Interface
	webhookKruiseClient versioned.Interface
	// webhookMetadata lists a CRD's objects for deletion protection (nil: migrationClient).
	webhookMetadata metadata.Interface
	// webhookDynamic reads WorkloadSpread targets of any kind (nil: percentages of maxReplicas
	// count 0 replicas and patches are not tried at admission; tests).
	webhookDynamic dynamic.Interface
	// webhookClock is the certificate manager's; nil is the real clock.
	webhookClock clock.WithTicker
	// webhookListening, if set, is told the bound webhook address.
	webhookListening func(net.Addr)
}

// webhookClients are the clients admission reads with.
func (d deps) webhookClients() (kubernetes.Interface, versioned.Interface) {
	client, kruiseClient := d.webhookClient, d.webhookKruiseClient
	if client == nil {
		client = d.client
	}
	if kruiseClient == nil {
		kruiseClient = d.kruiseClient
	}
	return client, kruiseClient
}

func run(ctx context.Context, o *Options, d deps) error {
	logger := klog.FromContext(ctx)

	metrics := healthz.NewRegistry()
	enabled, disabled := SelectEnabled(o.featureGate(), d.builders)
	for _, x := range disabled {
		logger.Info("Controller disabled by a feature gate", "controller", x.Name, "gate", x.Gate)
	}
	// The first term's controllers are built now, so a bad configuration
	// fails at start-up, leader or not.
	first, err := buildTerm(o, d, enabled, metrics)
	if err != nil {
		return err
	}
	reg := first.reg
	logger.Info("Starting controller manager", "controllers", reg.Names(), "leaderElect", o.LeaderElect, "workers", o.Workers)

	apiReady := healthz.NewFlag("apiserver", "the Kubernetes API server has not answered yet")
	liveness := []healthz.Checker{healthz.Ping}
	// Two managers acting on one ImagePullJob or CRR would fight: do not start beside OpenKruise's.
	openKruise := newOpenKruiseGuard(d.leases, openKruiseLeaseNamespaces(o, kruiseNamespace()), clock.RealClock{})
	readyz := []healthz.Checker{apiReady, openKruise}
	var watchdog *leaderelection.HealthzAdaptor
	if o.LeaderElect {
		// Fails only when this replica leads but has not renewed for longer
		// than the lease plus this slack: a wedged leader gets restarted.
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
		liveness = append(liveness, watchdog)
		readyz = append(readyz, watchdog)
	}
	var hooks *webhooks
	if o.WebhookEnabled {
		// Not leader-gated: every replica serves admission and conversion,
		// and is ready only with a certificate the API server trusts.
		if hooks, err = newWebhooks(o, d, kruiseNamespace(), metrics); err != nil {
			return fmt.Errorf("setting up the webhooks: %w", err)
		}
		readyz = append(readyz, hooks.checks()...)
	}
	srv := healthz.New(healthz.Options{Addr: o.Addr, Gatherer: healthz.Gatherers(metrics), Healthz: liveness, Readyz: readyz})
	addr, err := srv.Listen()
	if err != nil {
		return err
	}
	if d.listening != nil {
		d.listening(addr)
	}
	if hooks != nil {
		waddr, err := hooks.listen()
		if err != nil {
			return err
		}
		if d.webhookListening != nil {
			d.webhookListening(waddr)
		}
	}

	// Each leadership term runs controllers and caches of its own: those of
	// a lost term are stopped and gone (informer factories cannot start
	// again), so a later term builds fresh ones. Terms never overlap.
	next := first
	lead := func(ctx context.Context) error {
		t := next
		next = nil
		if t == nil {
			var err error
			if t, err = buildTerm(o, d, enabled, metrics); err != nil {
				return err
			}
		}
		return t.run(ctx, o.Workers)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx) })
	if hooks != nil {
		hooks.run(gctx, g.Go)
	}
	g.Go(func() error {
		waitForAPIServer(gctx, d.client, apiReady)
		return nil
	})
	g.Go(func() error {
		if err := openKruise.wait(gctx); err != nil {
			return nil // cancelled while OpenKruise's kruise-manager runs
		}
		if !o.LeaderElect {
			logger.Info("Leader election disabled; starting controllers")
			return lead(gctx)
		}
		l := &leaderRun{opts: o, leases: d.leases, identity: d.identity, watchdog: watchdog, lead: lead}
		for {
			err := l.run(gctx)
			if !errors.Is(err, ErrLeadershipLost) {
				return err
			}
			// The API server may only have been out of reach for a while:
			// the controllers have stopped, so campaign again in-process
			// rather than exit and be restarted by the kubelet.
			logger.Info("Lost the leader-election lease; controllers stopped, campaigning again", "identity", d.identity)
		}
	})
	if err := g.Wait(); err != nil {
		return err
	}
	logger.Info("Controller manager stopped")
	return nil
}

// term is one leadership term's controllers and the informer factories that
// feed them.
type term struct {
	reg       *Registry
	factories []informerFactory
}

// buildTerm creates the informer factories and builds the enabled
// controllers on them. It does not call the API server.
func buildTerm(o *Options, d deps, enabled []Entry, metrics prometheus.Registerer) (*term, error) {
	// Caches keep only what the controllers read (transform.go): Pods and
	// Nodes an allow-list of fields, every other type all but managedFields.
	factory := informers.NewSharedInformerFactoryWithOptions(d.client, 0, informers.WithTransform(transformObject))
	namespace := kruiseNamespace()
	nsFactory := informers.NewSharedInformerFactoryWithOptions(d.client, 0,
		informers.WithNamespace(namespace), informers.WithTransform(transformObject))
	kruiseFactory := kruiseinformers.NewSharedInformerFactoryWithOptions(d.kruiseClient, 0, kruiseinformers.WithTransform(transformObject))
	secretFactory := informers.NewSharedInformerFactoryWithOptions(d.client, 0, informers.WithTransform(transformObject),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = "type!=helm.sh/release.v1" }))
	daemonConfigFactory := informers.NewSharedInformerFactoryWithOptions(d.client, 0,
		informers.WithNamespace(appsv1beta1.DaemonConfigNamespace), informers.WithTransform(transformObject))
	// Asked of discovery at the first sync that needs it, not here (builders call no API).
	resize := inplace.NewResizeSupport(d.client.Discovery().ServerResourcesForGroupVersion, clock.RealClock{})
	t := &term{
		reg:       NewRegistry(),
		factories: []informerFactory{factory, nsFactory, kruiseFactory, secretFactory, daemonConfigFactory},
	}
	newBudget := sync.OnceValue(func() budgetwait.Budget { return workloadBudget(o, d.kruiseClient, factory, kruiseFactory) })
	for _, e := range enabled {
		c, err := e.Build(Deps{
			Client: d.client, InformerFactory: factory,
			KruiseClient: d.kruiseClient, KruiseInformerFactory: kruiseFactory,
			Namespace: namespace, NamespaceInformerFactory: nsFactory,
			SecretInformerFactory: secretFactory, DaemonConfigInformerFactory: daemonConfigFactory,
			CRDClient: d.crdClient, MigrationClient: d.migrationClient,
			Options: o, Metrics: reregisterer{metrics}, Resize: resize, newBudget: newBudget,
		})
		if err != nil {
			return nil, fmt.Errorf("building controller %s: %w", e.Name, err)
		}
		if err := t.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// run starts the informers, waits for their caches and runs the controllers
// until ctx ends; it returns once the informers have stopped.
func (t *term) run(ctx context.Context, workers int) error {
	// Shutdown waits for the informers, which stop when ctx ends: cancel
	// first (defers run last-in, first-out).
	ctx, cancel := context.WithCancel(ctx)
	for _, f := range t.factories {
		defer f.Shutdown()
	}
	defer cancel()
	for _, f := range t.factories {
		f.Start(ctx.Done())
	}
	for _, f := range t.factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("cache for %v did not sync", typ)
			}
		}
	}
	return t.reg.Run(ctx, workers)
}

// reregisterer lets a controller built again for a later leadership term
// register its metrics again: its collector replaces the previous term's.
type reregisterer struct{ prometheus.Registerer }

func (r reregisterer) Register(c prometheus.Collector) error {
	err := r.Registerer.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		r.Registerer.Unregister(dup.ExistingCollector)
		return r.Registerer.Register(c)
	}
	return err
}

func (r reregisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// informerFactory is what lead needs of the core and kruise factories.
type informerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// kruiseNamespace is where kruise runs: $POD_NAMESPACE, else kruise-system.
func kruiseNamespace() string {
	if ns := os.Getenv(PodNamespaceEnv); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// waitForAPIServer polls the API server's version until it answers, then
// marks ready. It logs the first failure and every tenth after it.
func waitForAPIServer(ctx context.Context, client kubernetes.Interface, ready *healthz.Flag) {
	logger := klog.FromContext(ctx)
	failures := 0
	_ = wait.PollUntilContextCancel(ctx, apiServerPollInterval, true, func(ctx context.Context) (bool, error) {
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			if failures%10 == 0 {
				logger.Info("Kubernetes API server not reachable yet", "err", err, "attempts", failures+1)
			}
			failures++
			return false, nil
		}
		logger.Info("Connected to the Kubernetes API server", "version", v.GitVersion)
		ready.Set(true)
		return true, nil
	})
}
