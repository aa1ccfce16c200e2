// Package kubectlkruise is the `kubectl kruise` plugin: the root command
// and its wiring. Each command group lives in a package of its own below
// this one and is built from kubectl's Factory, so that the plugin reads
// kubeconfig, contexts and namespaces exactly as kubectl does.
package kubectlkruise

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/completion"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/create"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/describe"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/exec"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/expose"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/migrate"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/pull"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/recreate"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/rollout"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/scaledown"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/set"
)

// StdStreams are the process's standard input, output and error.
func StdStreams() genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// NewCommand is `kubectl kruise` with every command group under it.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().WithDiscoveryBurst(300).WithDiscoveryQPS(50)
	cmd := &cobra.Command{
		Use:   "kubectl-kruise",
		Short: "Drive kruise workloads and node operations from kubectl",
		Long: `kubectl kruise manages kruise's workloads (CloneSet, Advanced StatefulSet,
Advanced DaemonSet), node operations (container recreate, image pre-pull) and jobs
(describe them; run an AdvancedCronJob's job by hand) with the commands OpenKruise
users already type. It reads kubeconfig, contexts and namespaces as kubectl does.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Shown as `kubectl kruise` in usage lines when run through kubectl.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kruise"},
	}
	flags := cmd.PersistentFlags()
	configFlags.AddFlags(flags)
	// Through MatchVersionFlags, as kubectl builds its own: its ToRESTConfig sets the core group
	// defaults that kubectl's exec and attach need for their REST client.
	f := cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(configFlags))
	// kubectl's completions (set, exec, expose) read the cluster through it.
	completion.SetFactoryForCompletion(f)
	for _, sub := range commands(f, streams) {
		cmd.AddCommand(sub)
	}
	return cmd
}

// commands are the command groups, in the order `--help` lists them.
func commands(f cmdutil.Factory, streams genericiooptions.IOStreams) []*cobra.Command {
	return []*cobra.Command{
		rollout.NewCmdRollout(f, streams),
		recreate.NewCmdRecreate(f, streams),
		pull.NewCmdPull(f, streams),
		create.NewCmdCreate(f, streams),
		describe.NewCmdDescribe(f, streams),
		migrate.NewCmdMigrate(f, streams),
		set.NewCmdSet(f, streams),
		scaledown.NewCmdScaleDown(f, streams),
		exec.NewCmdExec(f, streams),
		expose.NewCmdExpose(f, streams),
	}
}
