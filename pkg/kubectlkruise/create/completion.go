package create

import (
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// completeFrom offers acj/ and cronjob/ and, once acj/ is typed, the
// namespace's AdvancedCronJobs.
func completeFrom(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		kind, _, found := strings.Cut(toComplete, "/")
		if _, isACJ := acjName(toComplete); !found || !isACJ {
			return []string{"acj/", "cronjob/"}, cobra.ShellCompDirectiveNoSpace
		}
		kruise, err := cliutil.KruiseClientset(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
		list, err := kruise.AppsV1beta1().AdvancedCronJobs(ns).List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, acj := range list.Items {
			names = append(names, kind+"/"+acj.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
