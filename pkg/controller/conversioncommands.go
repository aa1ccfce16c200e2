package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/process/cli"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
)

// conversionTarget is what both conversion commands act on: CRDs and the
// webhook Service they call.
type conversionTarget struct {
	kube      cli.KubeOptions
	crds      []string
	service   string
	namespace string
}

func newConversionTarget(fs *pflag.FlagSet, crdsHelp string) *conversionTarget {
	t := &conversionTarget{kube: cli.NewKubeOptions(), service: certs.ServiceName}
	t.kube.AddFlags(fs)
	fs.StringSliceVar(&t.crds, "crds", nil, crdsHelp)
	fs.StringVar(&t.service, "service-name", t.service, "The webhook Service (the controller's --webhook-service-name).")
	fs.StringVar(&t.namespace, "namespace", "", "Namespace of the Service; empty: $POD_NAMESPACE, else kruise-system.")
	return t
}

// run validates the flags and calls do with a context that ends on SIGTERM
// or SIGINT, a logger, and an apiextensions client.
func (t *conversionTarget) run(do func(ctx context.Context, client apiextensionsclient.Interface) error) error {
	if len(t.crds) == 0 {
		return fmt.Errorf("--crds is required")
	}
	if err := t.kube.Validate(); err != nil {
		return err
	}
	if t.namespace == "" {
		t.namespace = kruiseNamespace()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName(componentName))
	cfg, err := t.kube.RESTConfig(componentName)
	if err != nil {
		return err
	}
	client, err := newCRDClient(cfg)
	if err != nil {
		return fmt.Errorf("creating the apiextensions client: %w", err)
	}
	return do(ctx, client)
}

// NewResetConversionCommand returns "kruise-controller reset-conversion":
// it turns the named CRDs that convert through kruise's webhook Service back
// to strategy None (certs.ResetConversion). The Helm chart runs it as a
// pre-delete hook: helm uninstall keeps the CRDs but deletes the Service,
// and a CRD still calling it would fail every read of its version not
// stored.
func NewResetConversionCommand() *cobra.Command {
	var target *conversionTarget
	cmd := &cobra.Command{
		Use:   "reset-conversion --crds=NAME[,NAME...]",
		Short: "Turn CRDs converting through kruise's webhook back to strategy None (before an uninstall)",
		Long: `reset-conversion patches spec.conversion of each CRD named by --crds back to
{strategy: None} when it calls kruise's webhook Service (--namespace/--service-name),
removes the annotations setup-conversion put there, and leaves every other CRD alone.
The Helm chart runs it as a pre-delete hook, so that the CRDs helm uninstall keeps do
not call a Service that is gone. It exits 1 naming the CRDs it could not reset. A
running kruise-controller with its own certificates switches them back to its webhook.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return target.run(func(ctx context.Context, client apiextensionsclient.Interface) error {
				reset, err := certs.ResetConversion(ctx, client, target.namespace, target.service, target.crds, time.Now())
				klog.FromContext(ctx).Info("Conversion reset", "crds", reset)
				return err
			})
		},
	}
	target = newConversionTarget(cmd.Flags(), "CRDs to reset (the controller's --webhook-conversion-crds).")
	return cmd
}

// NewSetupConversionCommand returns "kruise-controller setup-conversion":
// with external certificates kruise-controller writes nothing, so the Helm
// chart runs this after each install and upgrade to make the CRDs convert
// through kruise's webhook and to put externalCerts.annotations on them
// (certs.SetupConversion), as it puts them on the webhook configurations.
func NewSetupConversionCommand() *cobra.Command {
	var target *conversionTarget
	var annotations []string
	var caBundle string
	cmd := &cobra.Command{
		Use:   "setup-conversion --crds=NAME[,NAME...] [--annotation=KEY=VALUE]... [--ca-bundle=PEM]",
		Short: "Make CRDs convert through kruise's webhook, annotated for cert-manager's cainjector (external certificates)",
		Long: `setup-conversion patches spec.conversion of each CRD named by --crds to call kruise's
webhook Service (--namespace/--service-name) at /convert, and puts each --annotation
on it (cert-manager.io/inject-ca-from=<namespace>/<Certificate>, for cainjector to fill
the caBundle), removing those an earlier run put there and this one has not. With
--ca-bundle it writes that CA into the conversion webhook as well (the chart owns the
CA); without it the caBundle is left as it is. A CRD already so is not written. The
Helm chart runs it as a post-install and post-upgrade hook when kruise runs with
external certificates (EnableExternalCerts); reset-conversion undoes it. It exits 1
naming the CRDs it could not set up, a missing CRD included.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			parsed, err := parseAnnotations(annotations)
			if err != nil {
				return err
			}
			if caBundle != "" && !strings.Contains(caBundle, "BEGIN CERTIFICATE") {
				return fmt.Errorf("--ca-bundle must be a PEM CA certificate (-----BEGIN CERTIFICATE-----...)")
			}
			return target.run(func(ctx context.Context, client apiextensionsclient.Interface) error {
				setup := certs.ConversionSetup{Namespace: target.namespace, Service: target.service, CRDs: target.crds,
					Annotations: parsed, CABundle: []byte(caBundle)}
				changed, err := certs.SetupConversion(ctx, client, setup, time.Now())
				klog.FromContext(ctx).Info("Conversion set up", "changed", changed, "annotations", jsonString(parsed))
				return err
			})
		},
	}
	fs := cmd.Flags()
	target = newConversionTarget(fs, "CRDs to set up (the controller's --webhook-conversion-crds).")
	fs.StringArrayVar(&annotations, "annotation", nil, "An annotation KEY=VALUE to put on each CRD (repeat for several).")
	fs.StringVar(&caBundle, "ca-bundle", "", "A PEM CA to write into the conversion webhooks (empty: leave the caBundle to cainjector).")
	return cmd
}

// parseAnnotations reads KEY=VALUE pairs (the value may hold '=').
func parseAnnotations(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("--annotation %q: want KEY=VALUE", p)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--annotation %q: %s is not an annotation key: %s", p, k, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
