package controller

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/featuregate"

	"github.com/nodekruise/kruise/pkg/controller/sidecarterminator"
	"github.com/nodekruise/kruise/pkg/process/cli"
	"github.com/nodekruise/kruise/pkg/process/features"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	wserver "github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// PodNamespaceEnv is filled from metadata.namespace by the downward API.
	PodNamespaceEnv = "POD_NAMESPACE"
	// DefaultNamespace is where kruise is installed.
	DefaultNamespace = "kruise-system"
	// DefaultLeaseName names the leader-election Lease.
	DefaultLeaseName = "kruise-controller"
	// DefaultAddr is the health and metrics address.
	DefaultAddr = ":10222"
)

// Options configures the controller process.
type Options struct {
	Kube cli.KubeOptions
	// Addr is the health and metrics listen address.
	Addr string
	// Workers is the number of workers each controller runs.
	Workers int

	// LeaderElect turns leader election on; off only for a single replica
	// (development, tests).
	LeaderElect bool
	// LeaseName and LeaseNamespace name the coordination.k8s.io Lease.
	LeaseName      string
	LeaseNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election
	// (see client-go's leaderelection.LeaderElectionConfig).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ShutdownGrace bounds how long controllers get to stop after leadership
	// ends or the process is asked to stop.
	ShutdownGrace time.Duration

	// SidecarTermination is how the Job sidecar terminator stops sidecars
	// on real nodes: "phase" or "crr" (see pkg/controller/sidecarterminator).
	SidecarTermination string

	// WebhookEnabled serves the admission and conversion webhooks on
	// WebhookAddr, on every replica, with the certificates of Secret
	// kruise-webhook-certs (pkg/webhook/certs).
	WebhookEnabled bool
	// WebhookAddr is the webhooks' HTTPS listen address.
	WebhookAddr string
	// WebhookServiceName is the Service the API server calls the webhooks
	// through: the serving certificate's names are its.
	WebhookServiceName string
	// WebhookCertValidity is the validity of a serving certificate kruise
	// issues (managed certificates); it is renewed after two thirds of it.
	WebhookCertValidity time.Duration
	// WebhookConversionCRDs are the CustomResourceDefinitions whose
	// conversion webhook (/convert) gets the CA; a CRD that converts
	// without a webhook (strategy None) is only read.
	WebhookConversionCRDs []string

	// Features decides which controllers run (see builders); --feature-gates
	// sets it. Nil means features.DefaultFeatureGate.
	Features featuregate.FeatureGate
}

// NewOptions returns the defaults; the Lease namespace comes from
// $POD_NAMESPACE when set.
func NewOptions() *Options {
	ns := os.Getenv(PodNamespaceEnv)
	if ns == "" {
		ns = DefaultNamespace
	}
	return &Options{
		Kube:           cli.NewKubeOptions(),
		Addr:           DefaultAddr,
		Workers:        2,
		LeaderElect:    true,
		LeaseName:      DefaultLeaseName,
		LeaseNamespace: ns,
		LeaseDuration:  15 * time.Second,
		RenewDeadline:  10 * time.Second,
		RetryPeriod:    2 * time.Second,
		ShutdownGrace:  5 * time.Second,

		SidecarTermination: string(sidecarterminator.MechanismPhase),

		WebhookAddr:         wserver.DefaultAddr,
		WebhookServiceName:  certs.ServiceName,
		WebhookCertValidity: certs.DefaultCertValidity,

		Features: features.DefaultFeatureGate,
	}
}

// featureGate returns Features, or the process-wide gate when it is nil.
func (o *Options) featureGate() featuregate.FeatureGate {
	if o.Features == nil {
		return features.DefaultFeatureGate
	}
	return o.Features
}

// enhancedLiveness says whether the enhanced liveness probe is served: gate EnhancedLivenessProbe,
// forced off without KruiseDaemon (nothing would run the probes), as in OpenKruise.
func (o *Options) enhancedLiveness() bool {
	fg := o.featureGate()
	return fg.Enabled(features.EnhancedLivenessProbe) && fg.Enabled(features.KruiseDaemon)
}

// deletionProtection says what of the policy.kruise.io/delete-protection label
// kruise-controller serves: the webhook of Namespaces and CRDs with
// ResourcesDeletionProtection, and the Cascading rule of CRDs with
// DeletionProtectionForCRDCascadingGate too. The second is forced off
// without the first, as in OpenKruise.
func (o *Options) deletionProtection() (enabled, crdCascading bool) {
	gate := o.featureGate()
	enabled = gate.Enabled(features.ResourcesDeletionProtection)
	return enabled, enabled && gate.Enabled(features.DeletionProtectionForCRDCascadingGate)
}

// AddFlags registers the controller's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Kube.AddFlags(fs)
	fs.StringVar(&o.Addr, "addr", o.Addr,
		"Listen address of /healthz, /readyz and /metrics: host:port, or unix:///abs/path for a unix socket (mode 0660, a stale one is replaced, removed on exit).")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Number of workers each controller runs.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect a leader through a coordination.k8s.io Lease so that only one replica runs controllers. Turn off only when running a single replica.")
	fs.StringVar(&o.LeaseName, "leader-elect-resource-name", o.LeaseName, "Name of the leader-election Lease.")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-resource-namespace", o.LeaseNamespace,
		"Namespace of the leader-election Lease. Defaults to $"+PodNamespaceEnv+", else "+DefaultNamespace+".")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration,
		"How long a standby waits after the last renewal before taking over the lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline,
		"How long the leader keeps retrying to renew before it gives up leadership: it stops its controllers and campaigns again. Must be less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod,
		"How long to wait between attempts to acquire or renew the lease.")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace-period", o.ShutdownGrace,
		"How long controllers get to stop on shutdown or loss of leadership.")
	fs.StringVar(&o.SidecarTermination, "sidecar-termination", o.SidecarTermination,
		"How the Job sidecar terminator stops sidecars on real nodes once the main containers have finished: "+
			"\"phase\" records the pod's phase from the main containers and lets the kubelet stop the sidecars (fastest; sidecar exit codes cannot fail the pod), "+
			"\"crr\" asks kruise-daemon to stop them with a ContainerRecreateRequest and leaves the pod's status to the kubelet (no pod status writes; sidecars must exit 0 on SIGTERM). "+
			"See docs/design/sidecar-terminator.md.")
	fs.BoolVar(&o.WebhookEnabled, "webhook-enabled", o.WebhookEnabled,
		"Serve the admission webhooks (the pod webhook of container launch priority) and CRD conversion (/convert) over HTTPS on --webhook-addr, "+
			"on every replica, leader or not; /readyz then also waits for a valid certificate whose CA the webhook configurations carry. "+
			"The Helm chart's webhook.enabled sets it and renders the Service and webhook configurations.")
	fs.StringVar(&o.WebhookAddr, "webhook-addr", o.WebhookAddr, "Listen address (host:port) of the webhooks, with --webhook-enabled.")
	fs.StringVar(&o.WebhookServiceName, "webhook-service-name", o.WebhookServiceName,
		"Service (in kruise's namespace) the API server calls the webhooks through; the serving certificate names it.")
	fs.DurationVar(&o.WebhookCertValidity, "webhook-cert-validity", o.WebhookCertValidity,
		"Validity of the webhook serving certificates kruise issues (not with EnableExternalCerts); each is renewed, without a restart, "+
			"when two thirds of it have passed. At least 1m, at most the CA's 10 years.")
	fs.StringSliceVar(&o.WebhookConversionCRDs, "webhook-conversion-crds", o.WebhookConversionCRDs,
		"CustomResourceDefinitions (e.g. nodeimages.apps.kruise.io) whose spec.conversion.webhook calls /convert: kruise writes its CA into "+
			"their caBundle (not with EnableExternalCerts) and is not ready until they trust its certificate. A CRD converting with strategy None is only read.")
}

// Validate checks the options and says which flag to fix.
func (o *Options) Validate() error {
	var errs []error
	if err := o.Kube.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Addr == "" {
		errs = append(errs, errors.New("--addr must not be empty"))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.Workers))
	}
	if m, err := sidecarterminator.ParseMechanism(o.SidecarTermination); err != nil {
		errs = append(errs, fmt.Errorf("--sidecar-termination: %w", err))
	} else if gate := o.featureGate(); m == sidecarterminator.MechanismCRR &&
		gate.Enabled(features.SidecarTerminator) && !gate.Enabled(features.KruiseDaemon) {
		errs = append(errs, fmt.Errorf("--sidecar-termination=crr stops sidecars through ContainerRecreateRequests, which only kruise-daemon carries out, "+
			"but --feature-gates says %s=false (no daemon is deployed): use --sidecar-termination=phase, which needs no daemon", features.KruiseDaemon))
	}
	if o.WebhookEnabled {
		if o.WebhookAddr == "" {
			errs = append(errs, errors.New("--webhook-addr must not be empty with --webhook-enabled"))
		}
		if msgs := validation.IsDNS1035Label(o.WebhookServiceName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--webhook-service-name %q is not a Service name: %s", o.WebhookServiceName, strings.Join(msgs, "; ")))
		}
		if o.WebhookCertValidity < certs.MinCertValidity || o.WebhookCertValidity > certs.DefaultCAValidity {
			errs = append(errs, fmt.Errorf("--webhook-cert-validity must be between %s and %s, got %s",
				certs.MinCertValidity, certs.DefaultCAValidity, o.WebhookCertValidity))
		}
	}
	if o.ShutdownGrace < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-grace-period must not be negative, got %s", o.ShutdownGrace))
	}
	if o.LeaderElect {
		if o.LeaseName == "" || o.LeaseNamespace == "" {
			errs = append(errs, errors.New("--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty"))
		}
		if o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)",
				o.LeaseDuration, o.RenewDeadline))
		}
		if minRenew := time.Duration(leaderelection.JitterFactor * float64(o.RetryPeriod)); o.RenewDeadline <= minRenew {
			errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be greater than %.1f x --leader-elect-retry-period (%s)",
				o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod))
		}
		if o.RetryPeriod <= 0 {
			errs = append(errs, fmt.Errorf("--leader-elect-retry-period must be positive, got %s", o.RetryPeriod))
		}
	}
	return errors.Join(errs...)
}
