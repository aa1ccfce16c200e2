package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// provisionerName is the StorageClass provisioner and the provisioned-by annotation of the volumes.
const provisionerName = "kruise.local/localpv"

// options are the command's flags.
type options struct {
	kubeconfig string
	nodeName   string
	root       string
	class      string
}

func main() {
	var o options
	fs := flag.NewFlagSet("localpv", flag.ExitOnError)
	klog.InitFlags(fs)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fs.StringVar(&o.nodeName, "node-name", "", "the node this machine is, whose kubernetes.io/hostname label volumes are pinned to (required)")
	fs.StringVar(&o.root, "root", "", "directory under which each volume is a directory named after its PersistentVolume (required)")
	fs.StringVar(&o.class, "storage-class", "localpv", "name of the default StorageClass to create")
	_ = fs.Parse(os.Args[1:])
	if o.kubeconfig == "" || o.nodeName == "" || o.root == "" {
		fmt.Fprintln(os.Stderr, "localpv: --kubeconfig, --node-name and --root are required")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := klog.Background().WithName("localpv")
	ctx = klog.NewContext(ctx, logger)
	if err := run(ctx, o); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(err, "Stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// run applies the StorageClass, then provisions, deletes and resizes volumes until ctx ends.
func run(ctx context.Context, o options) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.UserAgent = "localpv"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	if err := os.MkdirAll(o.root, 0o755); err != nil {
		return fmt.Errorf("creating the volumes' root: %w", err)
	}
	if err := ensureClassPatiently(ctx, client, defaultClass(o.class, provisionerName), time.Second, time.Minute); err != nil {
		return err
	}

	// One informer of claims and one of volumes, shared by the library's controller and the resizer.
	factory := informers.NewSharedInformerFactory(client, 0)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	prov := &dirProvisioner{root: o.root, node: o.nodeName}
	pc := controller.NewProvisionController(ctx, client, provisionerName, prov,
		controller.LeaderElection(false), // one process per cluster
		controller.ClaimsInformer(claims.Informer()),
		controller.VolumesInformer(volumes.Informer()),
		// A failed directory operation is retried soon: this is a test cluster, not a cloud API.
		controller.ExponentialBackOffOnError(false),
		controller.ProvisionTimeout(30*time.Second),
		controller.DeletionTimeout(30*time.Second),
	)
	rz := newResizer(ctx, client, provisionerName, claims, volumes)
	factory.Start(ctx.Done())

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { pc.Run(ctx); return ctx.Err() })
	g.Go(func() error { return rz.run(ctx) })
	klog.FromContext(ctx).Info("Serving", "storageClass", o.class, "node", o.nodeName, "root", o.root)
	return g.Wait()
}
