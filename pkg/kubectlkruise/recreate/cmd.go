// Package recreate is `kubectl kruise recreate`: it asks kruise to recreate
// containers of a running pod in place, through a ContainerRecreateRequest,
// and can follow the request until every container is done.
package recreate

import (
	"io"
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

const example = `  # Recreate container "app" of pod web-0 and wait until it runs again
  kubectl kruise recreate pod/web-0 -c app --wait

  # Recreate two containers one after the other, even if "app" is still starting
  kubectl kruise recreate pod/web-0 -c sidecar -c app --ordered --force --wait --timeout=2m

  # Print the request that would be created, without creating it
  kubectl kruise recreate pod/web-0 -c app --dry-run=client -o yaml`

// Options are the parsed flags and the clients of one run.
type Options struct {
	PrintFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Pod        string
	Containers []string
	Name       string
	Force      bool
	Ordered    bool
	// Seconds; negative means unset.
	TerminationGracePeriod int64
	UnreadyGracePeriod     int64
	ActiveDeadline         int64
	Wait                   bool
	Timeout                time.Duration

	Namespace   string
	DryRun      cmdutil.DryRunStrategy
	Kube        kubernetes.Interface
	Kruise      versioned.Interface
	printObject func(runtime.Object, io.Writer) error
	// suffix makes the generated name unique; replaced in tests.
	suffix func() string
}

// NewOptions are the defaults of the flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		PrintFlags:             genericclioptions.NewPrintFlags("created").WithTypeSetter(kruisescheme.Scheme),
		IOStreams:              streams,
		TerminationGracePeriod: -1,
		UnreadyGracePeriod:     -1,
		ActiveDeadline:         -1,
		Timeout:                5 * time.Minute,
		suffix:                 randomSuffix,
	}
}

// NewCmdRecreate is `kubectl kruise recreate`.
func NewCmdRecreate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:                   "recreate pod/NAME -c CONTAINER [-c CONTAINER...] [--force] [--wait]",
		DisableFlagsInUseLine: true,
		Short:                 "Recreate containers of a pod in place (ContainerRecreateRequest)",
		Long: `Recreate containers of a running pod in place: kruise runs each container's
preStop hook, stops it, and the kubelet starts it again in the same pod, on the
same node, with the same IP and volumes. The command creates a
ContainerRecreateRequest (crr) named <pod>-<random> unless --name is given; with
--wait it follows the request and prints each container's phase as it changes.`,
		Example:           example,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completePods(f),
		RunE:              cliutil.RunE(f, o),
	}
	flags := cmd.Flags()
	flags.StringSliceVarP(&o.Containers, "container", "c", nil, "Container to recreate (repeat, or separate with commas, for several); at least one.")
	flags.StringVar(&o.Name, "name", "", "Name of the ContainerRecreateRequest (default <pod>-<random>).")
	flags.BoolVar(&o.Force, "force", false, "Recreate a container even if it is still starting from an earlier restart (strategy.forceRecreate).")
	flags.BoolVar(&o.Ordered, "ordered", false, "Recreate the containers one after the other, in the order given (strategy.orderedRecreate).")
	flags.Int64Var(&o.TerminationGracePeriod, "termination-grace-period", -1, "Seconds a container may take to stop, preStop hook included (default: the pod's).")
	flags.Int64Var(&o.UnreadyGracePeriod, "unready-grace-period", -1, "Mark the pod not-ready this many seconds before stopping the containers (strategy.unreadyGracePeriodSeconds).")
	flags.Int64Var(&o.ActiveDeadline, "active-deadline", -1, "Seconds after which kruise gives up on the request and fails the containers not yet recreated (at least 3).")
	flags.BoolVar(&o.Wait, "wait", false, "Follow the request until it completes, printing each container's phase; exit non-zero if a container failed.")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "With --wait, how long to wait before giving up (the request goes on); 0 waits forever.")
	cmdutil.AddDryRunFlag(cmd)
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("container", completeContainers(f))
	return cmd
}
