package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// options are the command's flags.
type options struct {
	kubeconfig               string
	namespace                string
	clusterResourceNamespace string
	workers                  int
}

func main() {
	var o options
	// A flag set of its own: controller-runtime registers --kubeconfig on flag.CommandLine.
	fs := flag.NewFlagSet("cert-manager-lite", flag.ExitOnError)
	klog.InitFlags(fs)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to run against (required)")
	fs.StringVar(&o.namespace, "namespace", "", "only act in this namespace (default: all namespaces)")
	fs.StringVar(&o.clusterResourceNamespace, "cluster-resource-namespace", "kube-system",
		"namespace of the Secrets that ClusterIssuers refer to")
	fs.IntVar(&o.workers, "workers", 2, "workers per controller")
	_ = fs.Parse(os.Args[1:])
	if o.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cert-manager-lite: --kubeconfig is required")
		os.Exit(2)
	}

	logger := klog.Background().WithName("cert-manager-lite")
	// cert-manager's packages log through logf.Log and the context, controller-runtime's through
	// its own global logger: all of them go to klog.
	logf.Log = logger
	ctrl.SetLogger(logger)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logger)

	if err := run(ctx, o); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(err, "Stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// run starts the certificate controllers and the cainjector and returns when ctx ends or one of
// them fails.
func run(ctx context.Context, o options) error {
	g, ctx := errgroup.WithContext(ctx)
	controllers, err := newControllers(ctx, o)
	if err != nil {
		return err
	}
	injector, err := newInjector(ctx, o)
	if err != nil {
		return err
	}
	g.Go(func() error { return controllers.run(ctx, g) })
	g.Go(func() error { return injector.Start(ctx) })
	return g.Wait()
}
