// Package controller wires kruise-controller: leader election, the shared
// informer factory, health and metrics, and the registry of controllers that
// run while this replica leads.
//
// A controller lives in its own sub-package (pkg/controller/<name>) and does
// not import this package: it only has to satisfy Controller. This package
// lists the constructors (builders.go) and so imports them, never the
// other way round. Each entry names the feature gates it needs; a
// controller a gate turns off is never built, so its informers never start.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// Controller is one reconciliation loop.
type Controller interface {
	// Name identifies the controller in logs, metrics and queue names.
	Name() string
	// Run processes work with the given number of workers until ctx is
	// cancelled, then returns nil. Caches are synced before Run is called.
	// An error stops every controller and the process.
	Run(ctx context.Context, workers int) error
}

// Deps are what a controller is built from. Informers must come from
// InformerFactory: it is started, and its caches synced, only once this
// replica leads.
type Deps struct {
	Client          kubernetes.Interface
	InformerFactory informers.SharedInformerFactory
	// KruiseClient and KruiseInformerFactory serve the apps.kruise.io kinds.
	KruiseClient          versioned.Interface
	KruiseInformerFactory kruiseinformers.SharedInformerFactory
	// Namespace is where kruise runs ($POD_NAMESPACE, else kruise-system);
	// NamespaceInformerFactory's informers see only that namespace (e.g.
	// the daemons' heartbeat Leases).
	Namespace                string
	NamespaceInformerFactory informers.SharedInformerFactory
	// SecretInformerFactory watches secrets cluster-wide except Helm
	// release records (the biggest and never pull secrets);
	// DaemonConfigInformerFactory sees only kruise-daemon-config.
	SecretInformerFactory       informers.SharedInformerFactory
	DaemonConfigInformerFactory informers.SharedInformerFactory
	// CRDClient reads kruise's CRDs; MigrationClient lists and patches their objects' metadata,
	// with a rate limit of its own (storage version migration). Both nil in tests.
	CRDClient       apiextensionsclient.Interface
	MigrationClient metadata.Interface
	// Options are the process's flags (per-controller settings).
	Options *Options
	// Metrics registers a controller's own metrics, served on /metrics.
	Metrics prometheus.Registerer
	// Resize says whether the API server resizes pods (pods/resize, Kubernetes 1.33+), asked
	// lazily of discovery; the workloads that resize in place read it.
	Resize *inplace.ResizeSupport
	// Budget charges the PodUnavailableBudgets; the four workloads ask it before an in-place
	// update under gate PodUnavailableBudgetUpdateGate (budgetCheck). nil: none are asked.
	Budget budgetwait.Budget
}

// Builder constructs a controller. It must not call the API server: it runs
// on every replica, leader or not.
type Builder func(Deps) (Controller, error)

// Entry is one controller kruise-controller can run.
type Entry struct {
	// Name is the controller's Name(), for logging it when it is off.
	Name string
	// Gates are the feature gates the controller needs; all must be enabled.
	Gates []featuregate.Feature
	Build Builder
}

// Disabled is a controller a feature gate turned off.
type Disabled struct {
	Name string
	// Gate is the first of the controller's gates that is off.
	Gate featuregate.Feature
}

// SelectEnabled splits entries into those whose gates are all enabled in
// gate, in their order, and those some gate turns off.
func SelectEnabled(gate featuregate.FeatureGate, entries []Entry) (enabled []Entry, disabled []Disabled) {
	for _, e := range entries {
		off := featuregate.Feature("")
		for _, g := range e.Gates {
			if !gate.Enabled(g) {
				off = g
				break
			}
		}
		if off != "" {
			disabled = append(disabled, Disabled{Name: e.Name, Gate: off})
			continue
		}
		enabled = append(enabled, e)
	}
	return enabled, disabled
}

// Registry holds the controllers to run while leading.
type Registry struct {
	controllers []Controller
	names       map[string]bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{names: map[string]bool{}}
}

// Register adds c; names must be unique and non-empty.
func (r *Registry) Register(c Controller) error {
	name := c.Name()
	if name == "" {
		return errors.New("controller has an empty name")
	}
	if r.names[name] {
		return fmt.Errorf("controller %q registered twice", name)
	}
	r.names[name] = true
	r.controllers = append(r.controllers, c)
	return nil
}

// Names lists the registered controllers in registration order.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.controllers))
	for _, c := range r.controllers {
		out = append(out, c.Name())
	}
	return out
}

// Run starts every controller and blocks until ctx is cancelled and all have
// returned. If one fails, or returns before ctx is cancelled, the others are
// cancelled and the first failure is returned.
func (r *Registry) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	if len(r.controllers) == 0 {
		logger.Info("No controllers registered; idling until shutdown")
		<-ctx.Done()
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var wg sync.WaitGroup
	for _, c := range r.controllers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clog := klog.LoggerWithValues(logger, "controller", c.Name())
			clog.Info("Starting controller", "workers", workers)
			err := c.Run(klog.NewContext(ctx, clog), workers)
			switch {
			case err != nil:
				cancel(fmt.Errorf("controller %q failed: %w", c.Name(), err))
			case ctx.Err() == nil:
				cancel(fmt.Errorf("controller %q stopped before shutdown", c.Name()))
			default:
				clog.Info("Controller stopped")
			}
		}()
	}
	logger.Info("Started controllers", "controllers", r.Names())
	<-ctx.Done()
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}
