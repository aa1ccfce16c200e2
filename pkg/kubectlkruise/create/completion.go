package create

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// completeFrom completes --from: the kinds, then the namespace's
// AdvancedCronJobs once acj/ is typed.
func completeFrom(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return fromCompletions(toComplete, func() ([]string, error) {
			kruise, err := cliutil.KruiseClientset(f)
			if err != nil {
				return nil, err
			}
			ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
			return acjNames(cmd.Context(), kruise, ns)
		})
	}
}

// fromCompletions offers acj/ and cronjob/ until a kind is typed, then,
// for an AdvancedCronJob kind, that kind with each name names gives (a
// CronJob's names are kubectl's to complete).
func fromCompletions(toComplete string, names func() ([]string, error)) ([]string, cobra.ShellCompDirective) {
	if !strings.Contains(toComplete, "/") {
		return []string{"acj/", "cronjob/"}, cobra.ShellCompDirectiveNoSpace
	}
	if _, isACJ := acjName(toComplete); !isACJ {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := names()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	kind, _, _ := strings.Cut(toComplete, "/")
	out := make([]string, 0, len(list))
	for _, n := range list {
		out = append(out, kind+"/"+n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func acjNames(ctx context.Context, kruise versioned.Interface, ns string) ([]string, error) {
	list, err := kruise.AppsV1beta1().AdvancedCronJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, acj := range list.Items {
		names = append(names, acj.Name)
	}
	return names, nil
}
