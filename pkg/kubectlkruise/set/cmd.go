// Package set is `kubectl kruise set image|env|resources|selector|
// serviceaccount|subject`: kubectl's own set commands, run on kruise's
// workloads too. kruisekinds teaches kubectl's helpers where a CloneSet's,
// an Advanced StatefulSet's, an Advanced DaemonSet's or a SidecarSet's
// containers are, and applies kubectl's strategic merge patch for the
// custom resources (which the API server takes only as merge patches).
package set

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlset "k8s.io/kubectl/pkg/cmd/set"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/completion"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/kruisekinds"
)

// examples are shown before kubectl's own, which name only built-in kinds.
var examples = map[string]string{
	"image": `  # Set CloneSet web's container app to busybox:1.37 (updated in place when only images change)
  kubectl kruise set image cloneset/web app=busybox:1.37

  # Every container of Advanced StatefulSet db, and a SidecarSet's sidecar
  kubectl kruise set image asts/db '*=busybox:1.37'
  kubectl kruise set image sidecarset/logging log-agent=fluent-bit:3.1
`,
	"env": `  # Add an environment variable to CloneSet web's containers
  kubectl kruise set env cloneset/web STAGE=prod

  # List the environment of Advanced DaemonSet agent
  kubectl kruise set env ads/agent --list
`,
	"resources": `  # Set CloneSet web's container app's requests and limits
  kubectl kruise set resources cloneset/web -c app --requests=cpu=100m,memory=64Mi --limits=cpu=200m
`,
	"selector": `  # Set a Service's selector (as kubectl, selectors are set on Services only)
  kubectl kruise set selector service/web app=web
`,
	"serviceaccount": `  # Run Advanced StatefulSet db's pods as service account db
  kubectl kruise set serviceaccount asts/db db
`,
	"subject": `  # Bind user alice to RoleBinding web-admins (as kubectl set subject)
  kubectl kruise set subject rolebinding web-admins --user=alice
`,
}

// kruiseKinds are the kinds each subcommand takes beyond kubectl's.
var kruiseKinds = map[string]string{
	"image":          "cloneset (clone), statefulset.apps.kruise.io (asts), daemonset.apps.kruise.io (ads), sidecarset",
	"env":            "cloneset (clone), statefulset.apps.kruise.io (asts), daemonset.apps.kruise.io (ads), sidecarset",
	"resources":      "cloneset (clone), statefulset.apps.kruise.io (asts), daemonset.apps.kruise.io (ads), sidecarset",
	"serviceaccount": "cloneset (clone), statefulset.apps.kruise.io (asts), daemonset.apps.kruise.io (ads)",
}

// NewCmdSet is `kubectl kruise set` with kubectl's subcommands.
func NewCmdSet(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	kruisekinds.Install()
	kf := kruisekinds.Factory(f)
	cmd := &cobra.Command{
		Use:   "set SUBCOMMAND",
		Short: "Set images, env, resources, service accounts of kruise workloads (as kubectl set)",
		Long: `Set specific features on objects, as kubectl set does, and on kruise's workloads too:
CloneSets (clone), Advanced StatefulSets (asts), Advanced DaemonSets (ads) and, for
image, env and resources, SidecarSets' containers.

The subcommands are kubectl's own: their flags and output are kubectl's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for _, sub := range []*cobra.Command{
		kubectlset.NewCmdImage(kf, streams),
		kubectlset.NewCmdEnv(kf, streams),
		kubectlset.NewCmdResources(kf, streams),
		kubectlset.NewCmdSelector(kf, streams),
		kubectlset.NewCmdServiceAccount(kf, streams),
		kubectlset.NewCmdSubject(kf, streams),
	} {
		if kinds := kruiseKinds[sub.Name()]; kinds != "" {
			sub.Long += "\n\nkubectl kruise adds: " + kinds
		}
		if ex := examples[sub.Name()]; ex != "" {
			sub.Example = ex + "\n" + sub.Example
		}
		// kubectl's completion lists built-in kinds only; any kind may be named.
		sub.ValidArgsFunction = completion.ResourceTypeAndNameCompletionFunc(f)
		cmd.AddCommand(sub)
	}
	return cmd
}
