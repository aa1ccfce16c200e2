package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/controller"
)

// controllerRolloutTimeout bounds a change of the controller's flags: the rollout of its
// replicas, then the Lease reaching one of the new pods (the lease duration at worst).
const controllerRolloutTimeout = 5 * time.Minute

const featureGatesFlag = "--feature-gates="

// SetControllerFeatureGate runs kruise-controller with gate set to value in its --feature-gates
// flag, and waits until one of the new pods leads. The controller's args are put back exactly as
// found when the test ends (however it ends), and that rollout is waited for too. Run it under
// the cluster's exclusive lock: every test on the cluster sees the change.
func (f *Framework) SetControllerFeatureGate(ctx context.Context, t testing.TB, gate string, value bool) {
	t.Helper()
	f.SetControllerFeatureGates(ctx, t, map[string]bool{gate: value})
}

// SetControllerFeatureGates is SetControllerFeatureGate for several gates in one rollout (and
// one rollout back), for the tests of several gated features that run side by side.
func (f *Framework) SetControllerFeatureGates(ctx context.Context, t testing.TB, gates map[string]bool) {
	t.Helper()
	orig, idx, err := f.controllerArgs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := orig
	for _, gate := range slices.Sorted(maps.Keys(gates)) {
		want = withFeatureGate(want, gate, gates[gate])
	}
	if slices.Equal(orig, want) {
		return
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*controllerRolloutTimeout)
		defer cancel()
		if err := f.applyControllerArgs(ctx, idx, orig); err != nil {
			t.Errorf("putting back the args of %s (%q): %v", ControllerDeployment, orig, err)
			return
		}
		t.Logf("%s runs with its args as found again: %q", ControllerDeployment, orig)
		f.WaitWebhookAnswers(ctx, t, controllerRolloutTimeout)
	})
	if err := f.applyControllerArgs(ctx, idx, want); err != nil {
		t.Fatalf("running %s with gates %v: %v", ControllerDeployment, gates, err)
	}
	t.Logf("%s runs with args %q", ControllerDeployment, want)
	// The new pods being Ready and leading is not enough for what the test creates next: the API
	// server may still call an old pod's address for a moment (a webhook call timing out).
	f.WaitWebhookAnswers(ctx, t, controllerRolloutTimeout)
}

// withFeatureGate is args with gate=value in its --feature-gates flag (added when absent).
func withFeatureGate(args []string, gate string, value bool) []string {
	out := slices.Clone(args)
	setting := fmt.Sprintf("%s=%t", gate, value)
	for i, a := range out {
		list, ok := strings.CutPrefix(a, featureGatesFlag)
		if !ok {
			continue
		}
		var kept []string
		for _, g := range strings.Split(list, ",") {
			if g != "" && !strings.HasPrefix(g, gate+"=") {
				kept = append(kept, g)
			}
		}
		out[i] = featureGatesFlag + strings.Join(append(kept, setting), ",")
		return out
	}
	return append(out, featureGatesFlag+setting)
}

// controllerArgs returns the args of kruise-controller's container and its index.
func (f *Framework) controllerArgs(ctx context.Context) ([]string, int, error) {
	d, err := f.Client.AppsV1().Deployments(KruiseNamespace).Get(ctx, ControllerDeployment, metav1.GetOptions{})
	if err != nil {
		return nil, 0, err
	}
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			return c.Args, i, nil
		}
	}
	return nil, 0, fmt.Errorf("%s/%s has no container named controller", KruiseNamespace, ControllerDeployment)
}

// applyControllerArgs sets the controller container's args, then waits for the rollout and for
// one of the new pods to hold the leader Lease.
func (f *Framework) applyControllerArgs(ctx context.Context, idx int, args []string) error {
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": fmt.Sprintf("/spec/template/spec/containers/%d/args", idx), "value": args}})
	if err != nil {
		return err
	}
	if _, err := f.Client.AppsV1().Deployments(KruiseNamespace).Patch(ctx, ControllerDeployment, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	var pods []string
	if _, err := Poll(ctx, controllerRolloutTimeout, func(ctx context.Context) (bool, string, error) {
		d, err := f.Client.AppsV1().Deployments(KruiseNamespace).Get(ctx, ControllerDeployment, metav1.GetOptions{})
		if err != nil {
			return false, "", Retry(err)
		}
		s, want := d.Status, ptr.Deref(d.Spec.Replicas, 1)
		desc := fmt.Sprintf("generation %d observed %d; replicas %d updated %d available %d, want %d", d.Generation, s.ObservedGeneration,
			s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
		if s.ObservedGeneration < d.Generation || s.Replicas != want || s.UpdatedReplicas != want || s.AvailableReplicas != want {
			return false, desc, nil
		}
		live, err := f.ControllerPods(ctx)
		if err != nil {
			return false, "", Retry(err)
		}
		pods = pods[:0]
		for i := range live {
			p := &live[i]
			if p.DeletionTimestamp != nil || !PodReady(p) || !slices.Equal(p.Spec.Containers[idx].Args, args) {
				return false, desc + "; pod " + p.Name + " not yet a ready pod with the new args", nil
			}
			pods = append(pods, p.Name)
		}
		return int32(len(pods)) == want, desc, nil
	}); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if _, err := Poll(ctx, controllerRolloutTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoordinationV1().Leases(KruiseNamespace).Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return false, "", Retry(err)
		}
		holder, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
		return slices.Contains(pods, holder), fmt.Sprintf("Lease holder %q, new pods %v", holder, pods), nil
	}); err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	return nil
}
