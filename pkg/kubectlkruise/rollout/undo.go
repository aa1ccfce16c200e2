package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

type undoOptions struct {
	toRevision int64
	dryRun     cmdutil.DryRunStrategy
	printFlags *genericclioptions.PrintFlags
}

func newCmdUndo(d *deps) *cobra.Command {
	o := undoOptions{printFlags: genericclioptions.NewPrintFlags("rolled back").WithTypeSetter(scheme.Scheme)}
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Undo a previous rollout",
		Long: `Roll a workload back to an earlier revision's pod template: the previous
one, or --to-revision. The workload then rolls its pods to that template as to
any other (in place where it can).`,
		Example: `  # Roll a CloneSet back to its previous revision
  kubectl kruise rollout undo cloneset/web

  # Roll an Advanced DaemonSet back to revision 3
  kubectl kruise rollout undo ads/agent --to-revision=3

  # Show the template it would roll back to, changing nothing
  kubectl kruise rollout undo asts/db --dry-run=client`,
		Args:              targetArgs,
		ValidArgsFunction: d.completeTargets,
		RunE: d.onTarget(func(cmd *cobra.Command, t target) error {
			var err error
			if o.dryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
				return err
			}
			return d.runUndo(cmd.Context(), t, o)
		}),
	}
	cmd.Flags().Int64Var(&o.toRevision, "to-revision", 0, "The revision to roll back to. Default to 0 (last revision).")
	cmdutil.AddDryRunFlag(cmd)
	o.printFlags.AddFlags(cmd)
	return cmd
}

func (d *deps) runUndo(ctx context.Context, t target, o undoOptions) error {
	ctx, c, err := d.start(ctx)
	if err != nil {
		return err
	}
	if t.kind.builtin {
		obj, err := getBuiltin(ctx, c, t)
		if err != nil {
			return err
		}
		rollbacker, err := polymorphichelpers.RollbackerFor(t.kind.gvk.GroupKind(), c.kube)
		if err != nil {
			return err
		}
		result, err := rollbacker.Rollback(obj, nil, o.toRevision, o.dryRun)
		if err != nil {
			return err
		}
		return printAs(o.printFlags, t, obj, result, d.streams.Out)
	}
	kk, w, err := getKruise(ctx, c, t)
	if err != nil {
		return err
	}
	revisions, err := ownedRevisions(ctx, c, w)
	if err != nil {
		return err
	}
	r, err := findRevision(revisions, o.toRevision)
	if err != nil {
		return fmt.Errorf("%s %q: %w (see kubectl kruise rollout history %s/%s)", t.kind.display, t.name, err, kindArg(t.kind.display), t.name)
	}
	if templateMatches(r, w.podTemplate()) {
		return printAs(o.printFlags, t, w, fmt.Sprintf("skipped rollback (current template already matches revision %d)", r.Revision), d.streams.Out)
	}
	template, err := revisionTemplate(r)
	if err != nil {
		return err
	}
	if o.dryRun == cmdutil.DryRunClient {
		return printAs(o.printFlags, t, w, "will roll back to "+describeTemplate(template), d.streams.Out)
	}
	// A JSON patch replaces the template as a whole (a merge patch would
	// keep fields the revision does not have), and only if the object is
	// still the one read.
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": w.GetResourceVersion()},
		{"op": "replace", "path": "/spec/template", "value": template},
	})
	if err != nil {
		return fmt.Errorf("building the rollback patch: %w", err)
	}
	opts := metav1.PatchOptions{DryRun: cliutil.DryRun(o.dryRun)}
	rolled, err := kk.patch(ctx, c, t.namespace, t.name, types.JSONPatchType, patch, opts)
	if err != nil {
		return fmt.Errorf("rolling %s %q back to revision %d: %w", t.kind.display, t.name, r.Revision, err)
	}
	return printAs(o.printFlags, t, rolled, "rolled back", d.streams.Out)
}
