// Command kubectl-kruise is the kubectl plugin for kruise's workloads and
// node operations: installed on the PATH as kubectl-kruise, it runs as
// `kubectl kruise ...`.
package main

import (
	"k8s.io/component-base/cli"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise"
)

func main() {
	// Errors are printed as kubectl prints them ("error: ..." and exit 1),
	// not as a log line.
	if err := cli.RunNoErrOutput(kubectlkruise.NewCommand(kubectlkruise.StdStreams())); err != nil {
		cmdutil.CheckErr(err)
	}
}
