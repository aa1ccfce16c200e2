package controller

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/options/cli"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
)

// NewResetConversionCommand returns "kruise-controller reset-conversion":
// it turns the named CRDs that convert through kruise's webhook Service back
// to strategy None (certs.ResetConversion). The Helm chart runs it as a
// pre-delete hook: helm uninstall keeps the CRDs but deletes the Service,
// and a CRD still calling it would fail every read of its version not
// stored.
func NewResetConversionCommand() *cobra.Command {
	kube := cli.NewKubeOptions()
	service := certs.ServiceName
	namespace := ""
	var crds []string
	cmd := &cobra.Command{
		Use:   "reset-conversion --crds=NAME[,NAME...]",
		Short: "Turn CRDs converting through kruise's webhook back to strategy None (before an uninstall)",
		Long: `reset-conversion patches spec.conversion of each CRD named by --crds back to
{strategy: None} when it calls kruise's webhook Service (--namespace/--service-name),
and leaves every other CRD alone. The Helm chart runs it as a pre-delete hook, so that
the CRDs helm uninstall keeps do not call a Service that is gone. It exits 1 naming the
CRDs it could not reset. A running kruise-controller switches them back to its webhook.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(crds) == 0 {
				return fmt.Errorf("--crds is required")
			}
			if err := kube.Validate(); err != nil {
				return err
			}
			if namespace == "" {
				namespace = kruiseNamespace()
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			logger := klog.Background().WithName(componentName)
			ctx = klog.NewContext(ctx, logger)
			cfg, err := kube.RESTConfig(componentName)
			if err != nil {
				return err
			}
			client, err := newCRDClient(cfg)
			if err != nil {
				return fmt.Errorf("creating the apiextensions client: %w", err)
			}
			reset, err := certs.ResetConversion(ctx, client, namespace, service, crds, time.Now())
			logger.Info("Conversion reset", "crds", reset)
			return err
		},
	}
	fs := cmd.Flags()
	kube.AddFlags(fs)
	fs.StringSliceVar(&crds, "crds", nil, "CRDs to reset (the controller's --webhook-conversion-crds).")
	fs.StringVar(&service, "service-name", service, "The webhook Service (the controller's --webhook-service-name).")
	fs.StringVar(&namespace, "namespace", namespace, "Namespace of the Service; empty: $POD_NAMESPACE, else kruise-system.")
	return cmd
}
