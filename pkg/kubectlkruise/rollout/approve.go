package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
)

// kruise-rollout's Rollout (rollouts.kruise.io): approve moves a step it
// paused on to ready, as kruise-tools does.
var rolloutGroupKind = schema.GroupKind{Group: "rollouts.kruise.io", Kind: "Rollout"}

const (
	stepPaused = "StepPaused"
	stepReady  = "StepReady"
)

// errNoRolloutCRD says kruise-rollout is not installed.
var errNoRolloutCRD = errors.New("rollouts.rollouts.kruise.io is not installed in this cluster: " +
	"approving a Rollout needs kruise-rollout (github.com/openkruise/rollouts)")

// rolloutsClient is the dynamic client of Rollouts at the version the
// cluster serves, from the cluster's REST mapping; errNoRolloutCRD when
// it serves none.
func rolloutsClient(mapper meta.RESTMapper, dyn dynamic.Interface) (dynamic.NamespaceableResourceInterface, error) {
	mapping, err := mapper.RESTMapping(rolloutGroupKind)
	if meta.IsNoMatchError(err) {
		return nil, errNoRolloutCRD
	}
	if err != nil {
		return nil, fmt.Errorf("looking Rollouts up in the cluster's API: %w", err)
	}
	return dyn.Resource(mapping.Resource), nil
}

func isRolloutKind(typed string) bool {
	switch strings.ToLower(typed) {
	case "rollout", "rollouts", "rollout.rollouts.kruise.io", "rollouts.rollouts.kruise.io", "ro":
		return true
	}
	return false
}

func newCmdApprove(d *deps) *cobra.Command {
	printFlags := genericclioptions.NewPrintFlags("approved").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "approve (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Approve a step a rollout paused on, so that it goes on",
		Long: `Approve the step a rollout is paused on.

A kruise-rollout Rollout (rollout/NAME, rollouts.kruise.io) paused at a step of its
canary or blue-green release (currentStepState StepPaused) is marked StepReady in its
status, as kruise-tools does: the Rollout controller then moves to the next step.

A CloneSet or Advanced StatefulSet (asts) that a Rollout drives is approved through that
Rollout. One held by hand at a partition (spec.updateStrategy.partition, or
rollingUpdate.partition) whose pods up to the partition are updated and ready is released:
its partition is set to 0, so that the rest of its pods are updated.`,
		Example: `  # Let Rollout rollout-demo go on to its next step
  kubectl kruise rollout approve rollout/rollout-demo

  # Release CloneSet web, updated up to its partition, to update the rest of its pods
  kubectl kruise rollout approve cloneset/web`,
		Args:              targetArgs,
		ValidArgsFunction: d.completeTargets,
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.runApprove(cmd.Context(), args, printFlags)
		},
	}
	printFlags.AddFlags(cmd)
	return cmd
}

func (d *deps) runApprove(ctx context.Context, args []string, printFlags *genericclioptions.PrintFlags) error {
	ns, err := d.namespace()
	if err != nil {
		return err
	}
	kind, name := "", ""
	if len(args) == 1 {
		kind, name, _ = strings.Cut(args[0], "/")
	} else {
		kind, name = args[0], args[1]
	}
	ctx, c, err := d.start(ctx)
	if err != nil {
		return err
	}
	if isRolloutKind(kind) {
		if name == "" {
			return fmt.Errorf("name the Rollout: rollout/NAME")
		}
		rollouts, err := c.rollouts()
		if err != nil {
			return err
		}
		return d.approveRollout(ctx, rollouts.Namespace(ns), name, printFlags)
	}
	t, err := parseTarget(args, ns)
	if err != nil {
		return fmt.Errorf("%w (or rollout/NAME)", err)
	}
	if t.kind.gvk.Group != "apps.kruise.io" || t.kind.gvk.Kind == "DaemonSet" {
		return fmt.Errorf("%s cannot be approved: approve a Rollout, a CloneSet or an Advanced StatefulSet", t.kind.display)
	}
	kk, w, err := getKruise(ctx, c, t)
	if err != nil {
		return err
	}
	// A Rollout driving the workload owns its partition: approve the Rollout.
	rollouts, err := c.rollouts()
	switch {
	case errors.Is(err, errNoRolloutCRD):
		// No Rollout can drive it.
	case err != nil:
		return err
	default:
		driver, err := rolloutOf(ctx, rollouts.Namespace(ns), t)
		if err != nil {
			return err
		}
		if driver != "" {
			fmt.Fprintf(d.streams.ErrOut, "%s %q is driven by Rollout %q: approving the Rollout\n", t.kind.display, t.name, driver)
			return d.approveRollout(ctx, rollouts.Namespace(ns), driver, printFlags)
		}
	}
	patch, err := partitionRelease(t, w)
	if err != nil {
		return err
	}
	if patch == nil {
		return printAs(printFlags, t, w, "already approved", d.streams.Out)
	}
	patched, err := kk.patch(ctx, c, t.namespace, t.name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("releasing %s %q's partition: %w", t.kind.display, t.name, err)
	}
	return printAs(printFlags, t, patched, "approved", d.streams.Out)
}

// partitionRelease is the patch that releases a workload's partition once
// its pods up to it are updated and ready: nil when it holds none back.
func partitionRelease(t target, w workload) ([]byte, error) {
	c := w.counts()
	if c.partition == 0 {
		return nil, nil
	}
	if !c.observed {
		return nil, fmt.Errorf("%s %q: the controller has not yet seen its latest spec; approve once it has", t.kind.display, t.name)
	}
	if ready := c.updatedReady; ready < c.target() {
		return nil, fmt.Errorf("%s %q is not at its partition yet: %d of %d pods updated and ready; approve once they are", t.kind.display, t.name, ready, c.target())
	}
	rv := w.GetResourceVersion()
	if t.kind.gvk.Kind == "CloneSet" {
		return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"updateStrategy":{"partition":0}}}`, rv), nil
	}
	return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`, rv), nil
}

// rolloutOf names the Rollout of the namespace whose workloadRef is t, or "".
func rolloutOf(ctx context.Context, rollouts dynamic.ResourceInterface, t target) (string, error) {
	list, err := rollouts.List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("listing Rollouts: %w", err)
	}
	for _, r := range list.Items {
		for _, path := range [][]string{{"spec", "workloadRef"}, {"spec", "objectRef", "workloadRef"}} {
			ref, _, _ := unstructured.NestedStringMap(r.Object, path...)
			gv, _ := schema.ParseGroupVersion(ref["apiVersion"])
			if ref["name"] == t.name && ref["kind"] == t.kind.gvk.Kind && gv.Group == t.kind.gvk.Group {
				return r.GetName(), nil
			}
		}
	}
	return "", nil
}

func (d *deps) approveRollout(ctx context.Context, rollouts dynamic.ResourceInterface, name string, printFlags *genericclioptions.PrintFlags) error {
	r, err := rollouts.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Rollout %q: %w", name, err)
	}
	patch, err := ApproveRolloutPatch(r)
	if err != nil {
		return fmt.Errorf(`rollout.rollouts.kruise.io %q: %w`, name, err)
	}
	patched, err := rollouts.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("approving Rollout %q: %w", name, err)
	}
	printFlags.NamePrintFlags.Operation = "approved"
	printer, err := printFlags.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(patched, d.streams.Out)
}

// ApproveRolloutPatch is the status patch that approves a Rollout's paused
// step, as kruise-tools approves it: a canary's (v1alpha1 and v1beta1) or
// a blue-green release's (v1beta1) currentStepState from StepPaused to
// StepReady. It is guarded by the Rollout's resourceVersion, so a step the
// controller moved meanwhile is not approved blindly.
func ApproveRolloutPatch(r *unstructured.Unstructured) ([]byte, error) {
	for _, release := range []struct{ field, name string }{{"canaryStatus", "canary"}, {"blueGreenStatus", "blue-green"}} {
		status, found, _ := unstructured.NestedMap(r.Object, "status", release.field)
		if !found || status == nil {
			continue
		}
		if state, _ := status["currentStepState"].(string); state != stepPaused {
			return nil, fmt.Errorf("does not allow to approve, because current %s state is %q, not %q", release.name, state, stepPaused)
		}
		return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"status":{%q:{"currentStepState":%q}}}`,
			r.GetResourceVersion(), release.field, stepReady), nil
	}
	return nil, errors.New("no need to approve: not in canary or blue-green progress")
}
