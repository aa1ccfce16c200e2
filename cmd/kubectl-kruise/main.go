// Command kubectl-kruise is the kubectl plugin for kruise's workloads and
// node operations: installed on the PATH as kubectl-kruise, it runs as
// `kubectl kruise ...`.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/nodekruise/kruise/pkg/kubectlkruise"
)

func main() {
	os.Exit(cli.Run(kubectlkruise.NewCommand(kubectlkruise.StdStreams())))
}
