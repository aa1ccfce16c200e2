package rollout

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubectl/pkg/polymorphichelpers"
)

type historyOptions struct {
	revision   int64
	printFlags *genericclioptions.PrintFlags
}

func newCmdHistory(d *deps) *cobra.Command {
	o := historyOptions{printFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)}
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME) [flags]",
		Short: "View rollout history",
		Long: `View a workload's revisions (its ControllerRevisions, or a Deployment's
ReplicaSets) with their change cause, or one revision's pod template.`,
		Example: `  # The revisions of a CloneSet
  kubectl kruise rollout history cloneset/web

  # The pod template of revision 3 of an Advanced StatefulSet
  kubectl kruise rollout history asts/db --revision=3`,
		Args:              targetArgs,
		ValidArgsFunction: d.completeTargets,
		RunE: d.onTarget(func(cmd *cobra.Command, t target) error {
			return d.runHistory(cmd.Context(), t, o)
		}),
	}
	cmd.Flags().Int64Var(&o.revision, "revision", 0, "See the details, including the pod template, of the revision specified.")
	o.printFlags.AddFlags(cmd)
	return cmd
}

func (d *deps) runHistory(ctx context.Context, t target, o historyOptions) error {
	ctx, c, err := d.start(ctx)
	if err != nil {
		return err
	}
	if t.kind.builtin {
		return d.builtinHistory(ctx, c, t, o)
	}
	_, w, err := getKruise(ctx, c, t)
	if err != nil {
		return err
	}
	revisions, err := ownedRevisions(ctx, c, w)
	if err != nil {
		return err
	}
	if o.printFlags.OutputFlagSpecified() {
		printer, err := o.printFlags.ToPrinter()
		if err != nil {
			return err
		}
		if o.revision > 0 {
			r, err := findRevision(revisions, o.revision)
			if err != nil {
				return fmt.Errorf("%s %q: %w", t.kind.display, t.name, err)
			}
			revisions = revisions[:0]
			revisions = append(revisions, r)
		}
		for _, r := range revisions {
			if err := printer.PrintObj(r, d.streams.Out); err != nil {
				return err
			}
		}
		return nil
	}
	info := historyTable(revisions)
	heading := ""
	if o.revision > 0 {
		r, err := findRevision(revisions, o.revision)
		if err != nil {
			return fmt.Errorf("%s %q: %w", t.kind.display, t.name, err)
		}
		template, err := revisionTemplate(r)
		if err != nil {
			return err
		}
		heading = fmt.Sprintf("with revision #%d", o.revision)
		info = describeTemplate(template)
	}
	return printAs(o.printFlags, t, w, fmt.Sprintf("%s\n%s", heading, info), d.streams.Out)
}

// builtinHistory is kubectl's `rollout history`, by kubectl's HistoryViewer.
func (d *deps) builtinHistory(ctx context.Context, c *clients, t target, o historyOptions) error {
	obj, err := getBuiltin(ctx, c, t)
	if err != nil {
		return err
	}
	viewer, err := polymorphichelpers.HistoryViewerFor(t.kind.gvk.GroupKind(), c.kube)
	if err != nil {
		return err
	}
	if o.printFlags.OutputFlagSpecified() {
		printer, err := o.printFlags.ToPrinter()
		if err != nil {
			return err
		}
		history, err := viewer.GetHistory(t.namespace, t.name)
		if err != nil {
			return err
		}
		if o.revision > 0 {
			r, ok := history[o.revision]
			if !ok {
				return fmt.Errorf("unable to find the specified revision")
			}
			return printer.PrintObj(r, d.streams.Out)
		}
		for n := int64(1); len(history) > 0; n++ {
			if r, ok := history[n]; ok {
				if err := printer.PrintObj(r, d.streams.Out); err != nil {
					return err
				}
				delete(history, n)
			}
		}
		return nil
	}
	info, err := viewer.ViewHistory(t.namespace, t.name, o.revision)
	if err != nil {
		return err
	}
	heading := ""
	if o.revision > 0 {
		heading = fmt.Sprintf("with revision #%d", o.revision)
	}
	return printAs(o.printFlags, t, obj, fmt.Sprintf("%s\n%s", heading, info), d.streams.Out)
}
