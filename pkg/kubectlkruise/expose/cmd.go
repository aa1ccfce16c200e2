// Package expose is `kubectl kruise expose`: kubectl's own expose, which
// also puts a Service in front of a CloneSet's or an Advanced
// StatefulSet's pods (kruisekinds gives kubectl their selector and their
// containers' ports).
package expose

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlexpose "k8s.io/kubectl/pkg/cmd/expose"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/completion"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/kruisekinds"
)

const example = `  # A Service on port 80 for CloneSet web's pods, forwarding to their port 8080
  kubectl kruise expose cloneset web --port=80 --target-port=8080

  # A NodePort Service named db for Advanced StatefulSet db, on its containers' port
  kubectl kruise expose asts/db --type=NodePort
`

// NewCmdExpose is `kubectl kruise expose`.
func NewCmdExpose(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	kruisekinds.Install()
	cmd := kubectlexpose.NewCmdExposeService(kruisekinds.Factory(f), streams)
	cmd.Short = "Expose a CloneSet, an Advanced StatefulSet (or what kubectl expose takes) as a Service"
	cmd.Long = `Expose a workload as a new Service, as kubectl expose does: the Service selects the
workload's pods by its selector's labels, on the port given or, without --port, the port
of its pod template's containers.

Kruise adds the CloneSet (clone) and the Advanced StatefulSet (asts.apps.kruise.io) to
kubectl's kinds (pod, service, replicationcontroller, deployment, replicaset). Their
selector must be matchLabels only: a Service cannot select by expressions.` + "\n\n" + cmd.Long
	cmd.Example = example + "\n" + cmd.Example
	cmd.ValidArgsFunction = completion.ResourceTypeAndNameCompletionFunc(f)
	return cmd
}
