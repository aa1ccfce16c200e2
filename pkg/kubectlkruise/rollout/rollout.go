// Package rollout is `kubectl kruise rollout`: status, history, undo, pause,
// resume and restart of CloneSets, Advanced StatefulSets and Advanced
// DaemonSets, and of the built-in Deployments, StatefulSets and DaemonSets,
// which it hands to kubectl's own implementations so that they behave
// exactly as under `kubectl rollout`.
package rollout

import (
	"context"

	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// clients are the API clients every subcommand works through.
type clients struct {
	kube   kubernetes.Interface
	kruise versioned.Interface
	// rollouts is kruise-rollout's Rollouts, or errNoRolloutCRD.
	rollouts func() (dynamic.NamespaceableResourceInterface, error)
}

// deps is what the subcommands need from kubectl's Factory, behind
// functions so that the tests hand in fake clientsets.
type deps struct {
	streams genericiooptions.IOStreams
	// clients builds the clients once the flags are parsed.
	clients func() (*clients, error)
	// namespace is the namespace of the objects named on the command line.
	namespace func() (string, error)
	// isTerminal reports whether out is a terminal (progress bar) or not
	// (one line per change).
	isTerminal func(out io.Writer) bool
	// now is the time restart stamps on the template.
	now func() time.Time
}

// NewCmdRollout is `kubectl kruise rollout` with its subcommands.
func NewCmdRollout(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	d := &deps{
		streams: streams,
		clients: func() (*clients, error) {
			kube, kruise, err := cliutil.Clientsets(f)
			if err != nil {
				return nil, err
			}
			return &clients{kube: kube, kruise: kruise, rollouts: func() (dynamic.NamespaceableResourceInterface, error) {
				config, err := f.ToRESTConfig()
				if err != nil {
					return nil, err
				}
				dyn, err := dynamic.NewForConfig(config)
				if err != nil {
					return nil, err
				}
				mapper, err := f.ToRESTMapper()
				if err != nil {
					return nil, err
				}
				return rolloutsClient(mapper, dyn)
			}}, nil
		},
		namespace: func() (string, error) {
			ns, _, err := f.ToRawKubeConfigLoader().Namespace()
			if err != nil {
				return "", fmt.Errorf("reading the namespace from kubeconfig: %w", err)
			}
			return ns, nil
		},
		isTerminal: isTerminal,
		now:        time.Now,
	}
	return newCmdRollout(d)
}

func newCmdRollout(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a workload",
		Long: `Manage the rollout of CloneSets, Advanced StatefulSets (asts), Advanced
DaemonSets (ads), and of the built-in Deployments, StatefulSets and DaemonSets
(handled exactly as kubectl rollout handles them).`,
		Example: `  # Follow a CloneSet's rollout, with live progress
  kubectl kruise rollout status cloneset/web

  # Roll an Advanced StatefulSet back to its previous revision
  kubectl kruise rollout undo asts/db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdStatus(d), newCmdHistory(d), newCmdUndo(d), newCmdPause(d), newCmdResume(d), newCmdRestart(d), newCmdApprove(d))
	return cmd
}

// start is what every subcommand begins with: its context (Background when cobra gave none,
// as in tests) and the clients.
func (d *deps) start(ctx context.Context) (context.Context, *clients, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := d.clients()
	return ctx, c, err
}
