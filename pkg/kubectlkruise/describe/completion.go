package describe

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// completeTargets offers the kinds as KIND/ and, once a kind is typed,
// the namespace's objects of that kind as KIND/NAME.
func completeTargets(f cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kind, _, found := strings.Cut(toComplete, "/")
		if !found || describerFor(strings.ToLower(kind)) == nil {
			return []string{"crr/", "imagepulljob/", "cloneset/", "asts/", "ads/", "bcj/", "acj/", "ejob/"}, cobra.ShellCompDirectiveNoSpace
		}
		kruise, err := cliutil.KruiseClientset(f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := f.ToRawKubeConfigLoader().Namespace()
		names, err := namesOf(cmd.Context(), kruise, ns, strings.ToLower(kind))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		for i, n := range names {
			names[i] = kind + "/" + n
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// namesOf lists the names of the namespace's objects of a kind.
func namesOf(ctx context.Context, kruise versioned.Interface, ns, kind string) ([]string, error) {
	apps := kruise.AppsV1beta1()
	var names []string
	opts := metav1.ListOptions{}
	switch {
	case isKind(kind, "containerrecreaterequest", "containerrecreaterequests", "crr"):
		list, err := apps.ContainerRecreateRequests(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case isKind(kind, "imagepulljob", "imagepulljobs"):
		list, err := apps.ImagePullJobs(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case isKind(kind, "cloneset", "clonesets", "clone"):
		list, err := apps.CloneSets(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case isKind(kind, "statefulset", "statefulsets", "asts", "sts"):
		list, err := apps.StatefulSets(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case isKind(kind, "broadcastjob", "broadcastjobs", "bcj"):
		list, err := apps.BroadcastJobs(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case isKind(kind, "advancedcronjob", "advancedcronjobs", "acj"):
		list, err := apps.AdvancedCronJobs(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case isKind(kind, "ephemeraljob", "ephemeraljobs", "ejob"):
		list, err := kruise.AppsV1alpha1().EphemeralJobs(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	default:
		list, err := apps.DaemonSets(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	}
	return names, nil
}

func isKind(kind string, names ...string) bool {
	for _, n := range names {
		if kind == n {
			return true
		}
	}
	return false
}
