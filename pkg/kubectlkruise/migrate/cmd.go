// Package migrate is `kubectl kruise migrate`: it moves a Deployment to a
// CloneSet (a StatefulSet to an Advanced StatefulSet, a DaemonSet to an
// Advanced DaemonSet) without downtime: it creates the kruise workload
// beside the old one, waits until all its pods are ready, and only then
// scales the old one to zero, keeping it for the user to delete.
package migrate

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

const example = `  # Move Deployment web to a CloneSet named web, then scale the Deployment to 0
  kubectl kruise migrate deployment/web --to cloneset

  # Print the CloneSet that would be created
  kubectl kruise migrate deployment/web --to cloneset --dry-run

  # StatefulSet db to an Advanced StatefulSet named db-asts (the pod names must differ)
  kubectl kruise migrate statefulset/db --to asts --timeout 20m

  # DaemonSet agent to an Advanced DaemonSet
  kubectl kruise migrate daemonset/agent --to ads`

// Options are the parsed flags and the clients of one run.
type Options struct {
	PrintFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Kind       string // deployment, statefulset or daemonset
	Source     string
	To         string
	Name       string
	NewVolumes bool
	Timeout    time.Duration

	Namespace   string
	DryRun      cmdutil.DryRunStrategy
	Kube        kubernetes.Interface
	Kruise      versioned.Interface
	printObject func(runtime.Object, io.Writer) error
}

// NewOptions are the defaults of the flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		PrintFlags: genericclioptions.NewPrintFlags("created").WithTypeSetter(kruisescheme.Scheme),
		IOStreams:  streams,
		Timeout:    10 * time.Minute,
	}
}

// NewCmdMigrate is `kubectl kruise migrate`.
func NewCmdMigrate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:                   "migrate (deployment|statefulset|daemonset)/NAME [--to cloneset|asts|ads] [--dry-run]",
		DisableFlagsInUseLine: true,
		Short:                 "Move a Deployment, StatefulSet or DaemonSet to kruise's workload without downtime",
		Long: `Move a built-in workload to kruise's: a Deployment to a CloneSet, a StatefulSet to an
Advanced StatefulSet, a DaemonSet to an Advanced DaemonSet. The new workload gets the
same selector, pod template and replicas and is created beside the old one, so both
run pods for a while; once all the new pods are ready and available, the old workload
is scaled to 0 (a DaemonSet: given a node selector no node matches). It is kept, to
be deleted by hand. The new workload does not take the old one's pods: they belong
to the old controller, and kruise adopts only pods that have no owner.

Ready pods never fall below the original count: the old pods keep running until the
new ones are all ready. If the new workload is not ready within --timeout, the old
one is left as it was, and the command fails naming how far the new one got.`,
		Example: example,
		Args:    cobra.RangeArgs(1, 2),
		RunE:    cliutil.RunE(f, o),
	}
	flags := cmd.Flags()
	flags.StringVar(&o.To, "to", "", "Kind to migrate to: cloneset (from a Deployment), asts (from a StatefulSet), ads (from a DaemonSet); the default follows the source.")
	flags.StringVar(&o.Name, "name", "", "Name of the new workload (default: the source's; for a StatefulSet <name>-asts).")
	flags.BoolVar(&o.NewVolumes, "new-volumes", false, "Migrate a StatefulSet with volumeClaimTemplates although the new pods get new, empty volumes.")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for the new workload to be ready before giving up (the old one is left as it was).")
	cmdutil.AddDryRunFlag(cmd)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the source, the namespace and the clients.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	var err error
	if o.Kind, o.Source, err = parseSource(args); err != nil {
		return err
	}
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.DryRun == cmdutil.DryRunClient && *o.PrintFlags.OutputFormat == "" {
		// A client dry run is for reading the manifest.
		*o.PrintFlags.OutputFormat = "yaml"
	}
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.DryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	o.printObject = printer.PrintObj
	o.Kube, o.Kruise, err = cliutil.Clientsets(f)
	return err
}

// parseSource reads KIND/NAME or KIND NAME, with kubectl's names of the
// three built-in kinds.
func parseSource(args []string) (string, string, error) {
	var kind, name string
	if len(args) == 2 {
		kind, name = args[0], args[1]
	} else if k, n, found := strings.Cut(args[0], "/"); found {
		kind, name = k, n
	} else {
		return "", "", fmt.Errorf("give the workload to migrate as KIND/NAME, e.g. deployment/%s", args[0])
	}
	switch strings.TrimSuffix(strings.ToLower(kind), ".apps") {
	case "deployment", "deployments", "deploy":
		kind = "deployment"
	case "statefulset", "statefulsets", "sts":
		kind = "statefulset"
	case "daemonset", "daemonsets", "ds":
		kind = "daemonset"
	default:
		return "", "", fmt.Errorf("cannot migrate a %q: migrate takes a deployment, statefulset or daemonset", kind)
	}
	if name == "" {
		return "", "", fmt.Errorf("give the name of the %s to migrate", kind)
	}
	return kind, name, nil
}

// targetKinds are the names --to accepts for each source kind.
func targetKinds(kind string) []string {
	switch kind {
	case "deployment":
		return []string{"cloneset", "clonesets", "clone"}
	case "statefulset":
		return []string{"asts", "statefulset", "statefulsets", "advancedstatefulset", "statefulset.apps.kruise.io"}
	}
	return []string{"ads", "daemonset", "daemonsets", "daemon", "advanceddaemonset", "daemonset.apps.kruise.io"}
}

// Validate checks that --to fits the source.
func (o *Options) Validate() error {
	if o.To != "" {
		to := strings.TrimSuffix(strings.ToLower(o.To), ".apps.kruise.io")
		allowed := targetKinds(o.Kind)
		ok := false
		for _, k := range allowed {
			ok = ok || strings.TrimSuffix(k, ".apps.kruise.io") == to
		}
		if !ok {
			return fmt.Errorf("a %s migrates to a %s, not to %q", o.Kind, allowed[0], o.To)
		}
	}
	if o.Timeout <= 0 {
		return errors.New("--timeout must be positive: the old workload is scaled down only once the new one is ready")
	}
	return nil
}
