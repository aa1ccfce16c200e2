package rollout

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubectl/pkg/polymorphichelpers"
)

// pauseOptions serve both pause (paused true) and resume (false).
type pauseOptions struct {
	paused     bool
	printFlags *genericclioptions.PrintFlags
}

func newCmdPause(d *deps) *cobra.Command {
	return newCmdPauseOrResume(d, true, &cobra.Command{
		Use:   "pause (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Mark the provided resource as paused",
		Long: `Pause a workload's update: pods not yet updated stay at their revision
(scaling goes on). CloneSet: spec.updateStrategy.paused; Advanced StatefulSet and
Advanced DaemonSet: spec.updateStrategy.rollingUpdate.paused; Deployment:
spec.paused, as kubectl.`,
		Example: `  # Hold a CloneSet's rollout where it is
  kubectl kruise rollout pause cloneset/web`,
	})
}

func newCmdResume(d *deps) *cobra.Command {
	return newCmdPauseOrResume(d, false, &cobra.Command{
		Use:   "resume (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Resume a paused resource",
		Long:  `Resume a paused workload's update.`,
		Example: `  # Let a paused CloneSet's rollout go on
  kubectl kruise rollout resume cloneset/web`,
	})
}

func newCmdPauseOrResume(d *deps, paused bool, cmd *cobra.Command) *cobra.Command {
	operation := "resumed"
	if paused {
		operation = "paused"
	}
	o := pauseOptions{paused: paused, printFlags: genericclioptions.NewPrintFlags(operation).WithTypeSetter(scheme.Scheme)}
	cmd.Args = targetArgs
	cmd.ValidArgsFunction = d.completeTargets
	cmd.RunE = d.onTarget(func(cmd *cobra.Command, t target) error { return d.runPause(cmd.Context(), t, o) })
	o.printFlags.AddFlags(cmd)
	return cmd
}

func (d *deps) runPause(ctx context.Context, t target, o pauseOptions) error {
	ctx, c, err := d.start(ctx)
	if err != nil {
		return err
	}
	operation, already := "resumed", "already resumed"
	if o.paused {
		operation, already = "paused", "already paused"
	}
	if t.kind.builtin {
		obj, err := getBuiltin(ctx, c, t)
		if err != nil {
			return err
		}
		mutate := func(obj runtime.Object) ([]byte, error) { return polymorphichelpers.ObjectResumerFn(obj) }
		if o.paused {
			mutate = func(obj runtime.Object) ([]byte, error) { return polymorphichelpers.ObjectPauserFn(obj) }
		}
		patch, err := builtinPatch(obj, mutate)
		if err != nil {
			return fmt.Errorf("%s %q: %w", t.kind.display, t.name, err)
		}
		if patch == nil {
			return printAs(o.printFlags, t, obj, already, d.streams.Out)
		}
		patched, err := patchBuiltin(ctx, c, t, types.StrategicMergePatchType, patch)
		if err != nil {
			return err
		}
		return printAs(o.printFlags, t, patched, operation, d.streams.Out)
	}
	kk, w, err := getKruise(ctx, c, t)
	if err != nil {
		return err
	}
	if w.isPaused() == o.paused {
		return printAs(o.printFlags, t, w, already, d.streams.Out)
	}
	patched, err := kk.patch(ctx, c, t.namespace, t.name, types.MergePatchType, kk.pausePatch(o.paused), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching %s %q to %s: %w", t.kind.display, t.name, operation, err)
	}
	return printAs(o.printFlags, t, patched, operation, d.streams.Out)
}
