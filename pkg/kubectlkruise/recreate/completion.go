package recreate

import (
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// completePods offers the names of the namespace's pods as pod/NAME.
func completePods(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kube, err := cliutil.KubeClientset(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
		pods, err := kube.CoreV1().Pods(ns).List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, "pod/"+p.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeContainers offers the containers of the pod given as argument.
func completeContainers(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		name, err := podName(args)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kube, err := cliutil.KubeClientset(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
		pod, err := kube.CoreV1().Pods(ns).Get(cmd.Context(), name, metav1.GetOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
