package certs

import (
	"errors"
	"fmt"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Defaults of Config.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
	DefaultResync       = 5 * time.Minute
	// MinCertValidity is the shortest serving certificate validity
	// accepted (e2e uses a short one to see renewals).
	MinCertValidity = time.Minute
)

// Config is what a Manager is built from.
type Config struct {
	// Mode says who writes the Secret and the caBundles; "" is ModeManaged.
	// The controller sets ModeExternal when the feature gate
	// EnableExternalCerts is on.
	Mode Mode
	// Namespace holds the Secret and the Service (the controller's own).
	Namespace string
	// SecretName is the Secret; "" is SecretName.
	SecretName string
	// ServiceName is the Service the API server calls; "" is ServiceName.
	ServiceName string
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration name
	// the configurations whose every webhook gets the CA; "" is
	// OpenKruise's name. Both must exist for the Manager to be ready.
	MutatingWebhookConfiguration   string
	ValidatingWebhookConfiguration string
	// CRDs are the names of the CustomResourceDefinitions that convert
	// through kruise's /convert. In ModeManaged the Manager writes each one's
	// whole spec.conversion (strategy Webhook, conversionReviewVersions
	// [v1], the Service's ConversionPath on port 443, the CA); in
	// ModeExternal it only verifies the caBundle of those whose strategy is
	// Webhook (one with strategy None calls no webhook).
	CRDs []string
	// CAValidity and CertValidity are the lifetimes of a new CA and a new
	// serving certificate (ModeManaged); 0 is the default. Each is renewed
	// when two thirds of its life have passed.
	CAValidity   time.Duration
	CertValidity time.Duration
	// Resync is the longest time between two checks of the Secret and the
	// caBundles when no watch event comes; 0 is DefaultResync.
	Resync time.Duration
	// Client reads and writes Secrets, webhook configurations and Events.
	Client kubernetes.Interface
	// CRDClient reads and patches the CRDs; required when CRDs is not empty.
	CRDClient apiextensionsclient.Interface
	// Recorder records Events; nil makes kruise-controller's, started by Run.
	Recorder record.EventRecorder
	// Clock is the time source; nil is the real clock.
	Clock clock.WithTicker
}

// withDefaults returns cfg with its defaults filled in, or why it is not
// usable.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeManaged
	}
	if cfg.SecretName == "" {
		cfg.SecretName = SecretName
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = ServiceName
	}
	if cfg.MutatingWebhookConfiguration == "" {
		cfg.MutatingWebhookConfiguration = MutatingWebhookConfigurationName
	}
	if cfg.ValidatingWebhookConfiguration == "" {
		cfg.ValidatingWebhookConfiguration = ValidatingWebhookConfigurationName
	}
	if cfg.CAValidity == 0 {
		cfg.CAValidity = DefaultCAValidity
	}
	if cfg.CertValidity == 0 {
		cfg.CertValidity = DefaultCertValidity
	}
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	var errs []error
	if cfg.Mode != ModeManaged && cfg.Mode != ModeExternal {
		errs = append(errs, fmt.Errorf("mode %q: want %s or %s", cfg.Mode, ModeManaged, ModeExternal))
	}
	if cfg.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if cfg.Client == nil {
		errs = append(errs, errors.New("a Kubernetes client is required"))
	}
	if len(cfg.CRDs) > 0 && cfg.CRDClient == nil {
		errs = append(errs, errors.New("an apiextensions client is required to write the CRDs' caBundles"))
	}
	if cfg.CertValidity < MinCertValidity {
		errs = append(errs, fmt.Errorf("serving certificate validity %s is shorter than %s", cfg.CertValidity, MinCertValidity))
	}
	if cfg.CAValidity < cfg.CertValidity {
		errs = append(errs, fmt.Errorf("CA validity %s is shorter than the serving certificate's %s", cfg.CAValidity, cfg.CertValidity))
	}
	if cfg.Resync < 0 {
		errs = append(errs, fmt.Errorf("resync period %s is negative", cfg.Resync))
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, fmt.Errorf("webhook certificates: %w", err)
	}
	return cfg, nil
}
