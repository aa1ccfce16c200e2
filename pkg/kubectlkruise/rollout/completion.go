package rollout

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// completeTargets completes KIND/ for the first word, and KIND/NAME once a
// kind is typed, listing that kind's objects in the namespace.
func (d *deps) completeTargets(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	kind, prefix, found := strings.Cut(toComplete, "/")
	if !found {
		var out []string
		for _, k := range kinds {
			if strings.HasPrefix(k.names[0], toComplete) {
				out = append(out, k.names[0]+"/")
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	t, err := d.resolveTarget([]string{kind + "/x"})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := d.clients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := listNames(cmd.Context(), c, t)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, kind+"/"+n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// listNames lists the names of t's kind in t's namespace.
func listNames(ctx context.Context, c *clients, t target) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var list runtime.Object
	var err error
	opts := metav1.ListOptions{}
	switch {
	case t.kind.builtin && t.kind.gvk.Kind == "Deployment":
		list, err = c.kube.AppsV1().Deployments(t.namespace).List(ctx, opts)
	case t.kind.builtin && t.kind.gvk.Kind == "StatefulSet":
		list, err = c.kube.AppsV1().StatefulSets(t.namespace).List(ctx, opts)
	case t.kind.builtin:
		list, err = c.kube.AppsV1().DaemonSets(t.namespace).List(ctx, opts)
	case t.kind.gvk.Kind == "CloneSet":
		list, err = c.kruise.AppsV1alpha1().CloneSets(t.namespace).List(ctx, opts)
	case t.kind.gvk.Kind == "StatefulSet":
		list, err = c.kruise.AppsV1beta1().StatefulSets(t.namespace).List(ctx, opts)
	default:
		list, err = c.kruise.AppsV1alpha1().DaemonSets(t.namespace).List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, item := range items {
		if m, err := meta.Accessor(item); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names, nil
}
