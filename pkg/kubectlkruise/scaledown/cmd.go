// Package scaledown is `kubectl kruise scaledown`: lower a CloneSet's
// replicas by deleting the pods named, not the ones the controller would
// choose. It adds them to spec.scaleStrategy.podsToDelete and lowers
// spec.replicas by as many in one patch, so the controller deletes exactly
// those and creates none in their place.
package scaledown

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

const example = `  # Delete pods web-x7k2p and web-m4q9z of CloneSet web: replicas goes down by 2
  kubectl kruise scaledown cloneset/web --pods=web-x7k2p,web-m4q9z

  # The same, as kruise-tools spells it; see what would be sent first
  kubectl kruise scaledown cloneset web --pods web-x7k2p,web-m4q9z --dry-run=client -o yaml`

// Options are scaledown's flags and what it works with.
type Options struct {
	PrintFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	// Pods are the names given with --pods.
	Pods      []string
	Namespace string
	Name      string
	DryRun    cmdutil.DryRunStrategy

	Kube   kubernetes.Interface
	Kruise versioned.Interface
}

// NewCmdScaleDown is `kubectl kruise scaledown`.
func NewCmdScaleDown(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{PrintFlags: newPrintFlags(), IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "scaledown (cloneset/NAME | cloneset NAME) --pods=POD[,POD...]",
		DisableFlagsInUseLine: true,
		Short:                 "Scale a CloneSet down by deleting the pods named",
		Long: `Scale a CloneSet down by deleting the pods named with --pods, rather than the ones the
controller would choose. The pods are added to spec.scaleStrategy.podsToDelete and
spec.replicas is lowered by as many, in one patch guarded by the CloneSet's
resourceVersion: the controller deletes them and creates none in their place.

Each pod must be one of the CloneSet's. A pod already in podsToDelete is not counted
again.`,
		Example:           example,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeCloneSets(f),
		RunE:              cliutil.RunE(f, o),
	}
	o.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmd.Flags().StringSliceVar(&o.Pods, "pods", nil, "Names of the CloneSet's pods to delete, comma-separated.")
	_ = cmd.RegisterFlagCompletionFunc("pods", completePods(f))
	return cmd
}

func newPrintFlags() *genericclioptions.PrintFlags {
	return genericclioptions.NewPrintFlags("scaled down").WithTypeSetter(kruisescheme.Scheme)
}

// Complete reads the CloneSet named and the clients.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	name, err := cloneSetName(args)
	if err != nil {
		return err
	}
	o.Name = name
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	o.Kube, o.Kruise, err = cliutil.Clientsets(f)
	return err
}

// cloneSetName reads `cloneset/NAME`, `cloneset NAME` (kruise-tools'
// `CloneSet NAME` too) or a bare NAME.
func cloneSetName(args []string) (string, error) {
	kind, name := "cloneset", ""
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 1:
		name = args[0]
	case len(args) == 2:
		kind, name = args[0], args[1]
	}
	switch strings.ToLower(kind) {
	case "cloneset", "clonesets", "clone", "cloneset.apps.kruise.io", "clonesets.apps.kruise.io":
	default:
		return "", fmt.Errorf("scaledown works on CloneSets only (cloneset/NAME), not %q", kind)
	}
	if name == "" {
		return "", fmt.Errorf("name the CloneSet: cloneset/NAME")
	}
	return name, nil
}

// Validate checks that pods were named.
func (o *Options) Validate() error {
	o.Pods = names(o.Pods)
	if len(o.Pods) == 0 {
		return fmt.Errorf("name the pods to delete with --pods=POD[,POD...]")
	}
	return nil
}

// names are the pod names typed, trimmed, without blanks or repeats.
func names(typed []string) []string {
	var out []string
	for _, n := range typed {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Run patches the CloneSet.
func (o *Options) Run(ctx context.Context) error {
	cs, err := o.Kruise.AppsV1alpha1().CloneSets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading CloneSet %q: %w", o.Name, err)
	}
	pods := make([]*corev1.Pod, 0, len(o.Pods))
	for _, n := range o.Pods {
		pod, err := o.Kube.CoreV1().Pods(o.Namespace).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading pod %q: %w", n, err)
		}
		pods = append(pods, pod)
	}
	p, err := PlanFor(cs, pods)
	if err != nil {
		return err
	}
	if len(p.Added) == 0 {
		return fmt.Errorf("pods %s are already being deleted by CloneSet %q: nothing to do", strings.Join(o.Pods, ", "), o.Name)
	}
	o.PrintFlags.NamePrintFlags.Operation = fmt.Sprintf("scaled down to %d replicas, deleting pods %s", p.Replicas, strings.Join(p.Added, ", "))
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.DryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	if o.DryRun == cmdutil.DryRunClient {
		return printer.PrintObj(p.Apply(cs.DeepCopy()), o.Out)
	}
	patched, err := o.Kruise.AppsV1alpha1().CloneSets(o.Namespace).Patch(ctx, o.Name, types.MergePatchType, p.Patch, metav1.PatchOptions{DryRun: cliutil.DryRun(o.DryRun)})
	if err != nil {
		return fmt.Errorf("scaling CloneSet %q down: %w", o.Name, err)
	}
	return printer.PrintObj(patched, o.Out)
}

// Plan is what scaledown changes in a CloneSet.
type Plan struct {
	// Added are the pods newly put in podsToDelete.
	Added []string
	// PodsToDelete and Replicas are the CloneSet's fields after the change.
	PodsToDelete []string
	Replicas     int32
	// Patch is the merge patch that makes the change, guarded by the
	// CloneSet's resourceVersion.
	Patch []byte
}

// PlanFor is the change that deletes pods from cs: each must be cs's
// (controlled by it); those already in podsToDelete are left as they are,
// and replicas goes down by the others.
func PlanFor(cs *appsv1alpha1.CloneSet, pods []*corev1.Pod) (Plan, error) {
	p := Plan{PodsToDelete: slices.Clone(cs.Spec.ScaleStrategy.PodsToDelete)}
	for _, pod := range pods {
		owner := metav1.GetControllerOf(pod)
		if owner == nil || owner.UID != cs.UID {
			return Plan{}, fmt.Errorf("pod %q is not CloneSet %q's: scaledown deletes only its own pods", pod.Name, cs.Name)
		}
		if pod.DeletionTimestamp != nil {
			return Plan{}, fmt.Errorf("pod %q is already being deleted", pod.Name)
		}
		if !slices.Contains(p.PodsToDelete, pod.Name) {
			p.Added = append(p.Added, pod.Name)
			p.PodsToDelete = append(p.PodsToDelete, pod.Name)
		}
	}
	replicas := int32(1)
	if cs.Spec.Replicas != nil {
		replicas = *cs.Spec.Replicas
	}
	if int(replicas) < len(p.Added) {
		return Plan{}, fmt.Errorf("CloneSet %q has %d replicas: it cannot lose %d pods", cs.Name, replicas, len(p.Added))
	}
	p.Replicas = replicas - int32(len(p.Added))
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cs.ResourceVersion},
		"spec": map[string]any{
			"replicas":      p.Replicas,
			"scaleStrategy": map[string]any{"podsToDelete": p.PodsToDelete},
		},
	})
	if err != nil {
		return Plan{}, err
	}
	p.Patch = patch
	return p, nil
}

// Apply makes the change in cs (what a client dry run prints).
func (p Plan) Apply(cs *appsv1alpha1.CloneSet) *appsv1alpha1.CloneSet {
	cs.Spec.Replicas = &p.Replicas
	cs.Spec.ScaleStrategy.PodsToDelete = p.PodsToDelete
	return cs
}
