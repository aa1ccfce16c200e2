package pull

import (
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// completeNodes offers the cluster's node names for --nodes.
func completeNodes(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		kube, err := cliutil.KubeClientset(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		nodes, err := kube.CoreV1().Nodes().List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
