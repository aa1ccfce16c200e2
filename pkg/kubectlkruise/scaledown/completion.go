package scaledown

import (
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// completeCloneSets completes cloneset/NAME with the namespace's CloneSets.
func completeCloneSets(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kruise, err := cliutil.KruiseClientset(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
		list, err := kruise.AppsV1alpha1().CloneSets(ns).List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out := make([]string, 0, len(list.Items))
		for _, cs := range list.Items {
			out = append(out, "cloneset/"+cs.Name)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completePods completes --pods with the pods of the CloneSet named.
func completePods(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		name, err := cloneSetName(args)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kube, kruise, err := cliutil.Clientsets(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
		cs, err := kruise.AppsV1alpha1().CloneSets(ns).Get(cmd.Context(), name, metav1.GetOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		selector, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		pods, err := kube.CoreV1().Pods(ns).List(cmd.Context(), metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		// Earlier names of the comma-separated list stay as typed.
		done, _ := cutLast(toComplete)
		var out []string
		for _, p := range pods.Items {
			if owner := metav1.GetControllerOf(&p); owner != nil && owner.UID == cs.UID {
				out = append(out, done+p.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func cutLast(s string) (string, string) {
	i := strings.LastIndex(s, ",")
	return s[:i+1], s[i+1:]
}
