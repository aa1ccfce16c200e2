// Package pull is `kubectl kruise pull`: it pre-pulls an image onto nodes
// through an ImagePullJob and can follow the pull node by node.
package pull

import (
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

const example = `  # Pull an image onto two nodes and follow the pull on each
  kubectl kruise pull registry.example.com/app:v2 --nodes node-a,node-b --wait

  # Pull onto every node labelled pool=web, four nodes at a time, with a registry secret
  kubectl kruise pull registry.example.com/app:v2 -l pool=web --parallelism 4 --pull-secret regcred --wait

  # Pull onto every node of the cluster
  kubectl kruise pull registry.example.com/app:v2 --all-nodes

  # Print the ImagePullJob that would be created
  kubectl kruise pull registry.example.com/app:v2 --nodes node-a --dry-run=client -o yaml`

// Options are the parsed flags and the clients of one run.
type Options struct {
	PrintFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Image        string
	Nodes        []string
	Selector     string
	AllNodes     bool
	PullSecrets  []string
	Name         string
	Parallelism  int32
	PullTimeout  time.Duration
	BackoffLimit int32
	Always       bool
	// TTL deletes the job this long after it finished; negative keeps it.
	TTL     time.Duration
	Wait    bool
	Timeout time.Duration

	Namespace   string
	DryRun      cmdutil.DryRunStrategy
	Kruise      versioned.Interface
	printObject func(runtime.Object, io.Writer) error
	// suffix makes the generated name unique; replaced in tests.
	suffix func() string
}

// NewOptions are the defaults of the flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		PrintFlags:   genericclioptions.NewPrintFlags("created").WithTypeSetter(kruisescheme.Scheme),
		IOStreams:    streams,
		BackoffLimit: -1,
		TTL:          -1,
		Timeout:      15 * time.Minute,
		suffix:       randomSuffix,
	}
}

// NewCmdPull is `kubectl kruise pull`.
func NewCmdPull(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:                   "pull IMAGE (--nodes NODE,... | -l KEY=VALUE | --all-nodes) [--pull-secret SECRET] [--wait]",
		DisableFlagsInUseLine: true,
		Short:                 "Pull an image onto nodes ahead of need (ImagePullJob)",
		Long: `Pull an image onto a set of nodes before any pod needs it. The command creates an
ImagePullJob named pull-<image>-<random> (unless --name is given) in the current
namespace; kruise-daemon on each selected node pulls the image. With --wait it
prints each node's progress (Waiting, Pulling, Succeeded, Failed with the reason)
until the job is done, and exits non-zero if the pull failed on any node.`,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE:    cliutil.RunE(f, o),
	}
	flags := cmd.Flags()
	flags.StringSliceVar(&o.Nodes, "nodes", nil, "Nodes to pull on, by name (comma-separated or repeated).")
	flags.StringVarP(&o.Selector, "selector", "l", "", "Pull on the nodes with these labels (a label selector, e.g. pool=web or 'zone in (a,b)').")
	flags.BoolVar(&o.AllNodes, "all-nodes", false, "Pull on every node of the cluster.")
	flags.StringSliceVar(&o.PullSecrets, "pull-secret", nil, "Secret (in the job's namespace) with registry credentials; repeat for several.")
	flags.StringVar(&o.Name, "name", "", "Name of the ImagePullJob (default pull-<image>-<random>).")
	flags.Int32Var(&o.Parallelism, "parallelism", 0, "Nodes that pull at the same time (default: all the nodes given with --nodes, else kruise's default of 1).")
	flags.DurationVar(&o.PullTimeout, "pull-timeout", 0, "How long one pull attempt may take on a node (default: kruise's 10m).")
	flags.Int32Var(&o.BackoffLimit, "backoff-limit", -1, "Retries of a failed pull on a node before the node counts as failed (default: kruise's 3).")
	flags.BoolVar(&o.Always, "always", false, "Pull even on nodes that already have the image (imagePullPolicy Always).")
	flags.DurationVar(&o.TTL, "ttl", -1, "Delete the job this long after it finished (default: keep it).")
	flags.BoolVar(&o.Wait, "wait", false, "Follow the job until it is done, printing each node's progress; exit non-zero if any node failed.")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "With --wait, how long to wait before giving up (the job goes on); 0 waits forever.")
	cmdutil.AddDryRunFlag(cmd)
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("nodes", completeNodes(f))
	return cmd
}
