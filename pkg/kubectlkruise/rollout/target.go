package rollout

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// target is the workload a subcommand acts on.
type target struct {
	kind      *kindInfo
	namespace string
	name      string
}

// ref is how kubectl names the object in its output: "cloneset.apps.kruise.io/web".
func (t target) ref() string { return t.kind.resource.String() + "/" + t.name }

// kindInfo is one kind of workload the rollout commands know.
type kindInfo struct {
	// display is the kind as a user reads it in messages.
	display string
	gvk     schema.GroupVersionKind
	// resource is the resource's plural with its group, as kubectl prints it.
	resource schema.GroupResource
	// builtin kinds are handed to kubectl's own implementations.
	builtin bool
	// names are what a user may type for the kind (singular, plural, short
	// names, and the forms qualified with the group).
	names []string
}

// The kinds, by what a user types. "statefulset", "sts", "daemonset" and
// "ds" alone are the built-in kinds, as for kubectl; the kruise ones are
// reached with their short names (asts, ads, clone) or their group.
var kinds = []*kindInfo{
	{
		display:  "CloneSet",
		gvk:      schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"},
		resource: schema.GroupResource{Group: "apps.kruise.io", Resource: "clonesets"},
		names:    []string{"cloneset", "clonesets", "clone"},
	},
	{
		display:  "Advanced StatefulSet",
		gvk:      schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet"},
		resource: schema.GroupResource{Group: "apps.kruise.io", Resource: "statefulsets"},
		names:    []string{"asts", "advancedstatefulset", "advancedstatefulsets"},
	},
	{
		display:  "Advanced DaemonSet",
		gvk:      schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet"},
		resource: schema.GroupResource{Group: "apps.kruise.io", Resource: "daemonsets"},
		names:    []string{"ads", "daemon", "advanceddaemonset", "advanceddaemonsets"},
	},
	{
		display:  "deployment",
		gvk:      schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		resource: schema.GroupResource{Group: "apps", Resource: "deployments"},
		builtin:  true,
		names:    []string{"deployment", "deployments", "deploy"},
	},
	{
		display:  "statefulset",
		gvk:      schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		resource: schema.GroupResource{Group: "apps", Resource: "statefulsets"},
		builtin:  true,
		names:    []string{"statefulset", "statefulsets", "sts"},
	},
	{
		display:  "daemonset",
		gvk:      schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		resource: schema.GroupResource{Group: "apps", Resource: "daemonsets"},
		builtin:  true,
		names:    []string{"daemonset", "daemonsets", "ds"},
	},
}

// kindNames is the list of accepted kinds for messages.
const kindNames = "cloneset (clone), asts, ads, deployment, statefulset (sts), daemonset (ds)"

// lookupKind finds the kind a user typed: a name of kindInfo.names, or a
// resource qualified with its group ("clonesets.apps.kruise.io",
// "statefulset.apps.kruise.io", "deployments.apps"), optionally with the
// version ("statefulsets.v1beta1.apps.kruise.io").
func lookupKind(typed string) (*kindInfo, error) {
	typed = strings.ToLower(typed)
	for _, k := range kinds {
		for _, n := range k.names {
			if typed == n {
				return k, nil
			}
		}
	}
	resource, group, found := strings.Cut(typed, ".")
	if found {
		group = strings.TrimPrefix(group, "v1beta1.")
		group = strings.TrimPrefix(group, "v1alpha1.")
		group = strings.TrimPrefix(group, "v1.")
		for _, k := range kinds {
			singular := strings.ToLower(k.gvk.Kind)
			if group == k.gvk.Group && (resource == k.resource.Resource || resource == singular) {
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("kind %q cannot be rolled out: use one of %s", typed, kindNames)
}

// parseTarget reads `KIND/NAME` or `KIND NAME`.
func parseTarget(args []string, namespace string) (target, error) {
	var kind, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		kind, name = args[0], args[1]
	default:
		return target{}, fmt.Errorf("name one workload as KIND/NAME or KIND NAME (e.g. cloneset/web), got %q", strings.Join(args, " "))
	}
	if name == "" {
		return target{}, fmt.Errorf("%q names no object: use KIND/NAME (e.g. cloneset/web)", strings.Join(args, " "))
	}
	k, err := lookupKind(kind)
	if err != nil {
		return target{}, err
	}
	return target{kind: k, namespace: namespace, name: name}, nil
}

// resolveTarget parses the command line's workload in the command's namespace.
func (d *deps) resolveTarget(args []string) (target, error) {
	ns, err := d.namespace()
	if err != nil {
		return target{}, err
	}
	return parseTarget(args, ns)
}

// onTarget is the RunE of a command on one workload: run with the workload its arguments name.
func (d *deps) onTarget(run func(cmd *cobra.Command, t target) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		t, err := d.resolveTarget(args)
		if err != nil {
			return err
		}
		return run(cmd, t)
	}
}

// targetArgs accepts KIND/NAME or KIND NAME.
func targetArgs(_ *cobra.Command, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("name one workload as KIND/NAME or KIND NAME (e.g. cloneset/web)")
	}
	return nil
}
