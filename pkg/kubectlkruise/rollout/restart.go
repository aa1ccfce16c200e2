package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// restartedAtKey is the pod template annotation kubectl sets to restart
// a workload's pods; kruise's in-place update engine reads a change of it
// as "restart every container".
const restartedAtKey = pub.RestartedAtAnnotationKey

type restartOptions struct {
	printFlags *genericclioptions.PrintFlags
}

func newCmdRestart(d *deps) *cobra.Command {
	o := restartOptions{printFlags: genericclioptions.NewPrintFlags("restarted").WithTypeSetter(scheme.Scheme)}
	cmd := &cobra.Command{
		Use:   "restart (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Restart a resource",
		Long: `Restart a workload's pods by a rollout: as kubectl, it stamps the pod
template with the annotation kubectl.kubernetes.io/restartedAt, and the
workload rolls every pod to the new template at its maxUnavailable and
partition. A workload that updates in place (InPlaceIfPossible, InPlaceOnly)
restarts each pod's containers in the same pod (same name, UID, IP and
volumes; kruise-daemon stops them and the kubelet starts them again); one
that recreates (ReCreate) replaces the pods. Follow it with
"kubectl kruise rollout status".`,
		Example: `  # Restart a CloneSet's pods
  kubectl kruise rollout restart cloneset/web`,
		Args:              targetArgs,
		ValidArgsFunction: d.completeTargets,
		RunE: d.onTarget(func(cmd *cobra.Command, t target) error {
			return d.runRestart(cmd.Context(), t, o)
		}),
	}
	o.printFlags.AddFlags(cmd)
	return cmd
}

func (d *deps) runRestart(ctx context.Context, t target, o restartOptions) error {
	ctx, c, err := d.start(ctx)
	if err != nil {
		return err
	}
	if t.kind.builtin {
		obj, err := getBuiltin(ctx, c, t)
		if err != nil {
			return err
		}
		patch, err := builtinPatch(obj, polymorphichelpers.ObjectRestarterFn)
		if err != nil {
			return fmt.Errorf("%s %q: %w", t.kind.display, t.name, err)
		}
		patched, err := patchBuiltin(ctx, c, t, types.StrategicMergePatchType, patch)
		if err != nil {
			return err
		}
		return printAs(o.printFlags, t, patched, "restarted", d.streams.Out)
	}
	kk, w, err := getKruise(ctx, c, t)
	if err != nil {
		return err
	}
	if w.isPaused() {
		return fmt.Errorf("can't restart paused %s %q (run kubectl kruise rollout resume %s/%s first)", t.kind.display, t.name, kindArg(t.kind.display), t.name)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{restartedAtKey: d.now().Format(time.RFC3339)},
	}}}})
	if err != nil {
		return fmt.Errorf("building the restart patch: %w", err)
	}
	patched, err := kk.patch(ctx, c, t.namespace, t.name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("restarting %s %q: %w", t.kind.display, t.name, err)
	}
	return printAs(o.printFlags, t, patched, "restarted", d.streams.Out)
}
