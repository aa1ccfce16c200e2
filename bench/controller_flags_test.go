//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The kruise-controller Deployment whose flags a benchmark sets.
const (
	kruiseNamespace     = "kruise-system"
	controllerDeploy    = "kruise-controller"
	controllerContainer = "controller"
	sidecarFlag         = "--sidecar-termination"
)

// rolloutTimeout bounds each stage of a change of the controller's flags: the rollout of its two
// replicas (each new pod must pass its readiness probe; the old ones stop gracefully), then the
// Lease reaching a new pod (at once when the old leader releases it, the lease duration, 15 s,
// and a retry when it could not), then the leader starting its controllers. On a loaded 2-core
// machine each takes seconds to a minute; this is far above.
const rolloutTimeout = 5 * time.Minute

// controllerFlags changes kruise-controller's args for a benchmark and puts back the ones it
// found, however the test ends.
type controllerFlags struct {
	b    *env
	orig []string
	idx  int // the controller container's index in the pod spec
}

// controllerFlags records the controller's args and registers their restoration.
func (b *env) controllerFlags(t *testing.T, ctx context.Context) *controllerFlags {
	t.Helper()
	args, idx, err := b.controllerArgs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &controllerFlags{b: b, orig: args, idx: idx}
	t.Cleanup(func() {
		ctx := context.Background()
		cur, _, err := b.controllerArgs(ctx)
		if err != nil {
			t.Errorf("restoring the args of %s: %v", controllerDeploy, err)
			return
		}
		if slices.Equal(cur, c.orig) {
			return
		}
		took, err := c.apply(ctx, c.orig, mechanismOf(c.orig))
		if err != nil {
			t.Errorf("restoring the args of %s to %q: %v", controllerDeploy, c.orig, err)
			return
		}
		t.Logf("restored the args of %s to %q in %s", controllerDeploy, c.orig, took.Round(100*time.Millisecond))
	})
	return c
}

// setSidecarTermination makes the controller run with --sidecar-termination=mechanism ("" for
// none: the default, phase) and waits until a controller so configured leads and has started
// the sidecar terminator. It does nothing when the controller already runs that way.
func (c *controllerFlags) setSidecarTermination(t *testing.T, ctx context.Context, mechanism string) {
	t.Helper()
	want := slices.DeleteFunc(slices.Clone(c.orig), func(a string) bool { return strings.HasPrefix(a, sidecarFlag) })
	if mechanism != "" {
		want = append(want, sidecarFlag+"="+mechanism)
	}
	cur, _, err := c.b.controllerArgs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(cur, want) {
		// Already so; still make sure such a controller leads (a rollout may be under way).
		if _, err := c.b.waitController(ctx, want, mechanismOf(want)); err != nil {
			t.Fatalf("%s with args %q: %v", controllerDeploy, want, err)
		}
		return
	}
	took, err := c.apply(ctx, want, mechanismOf(want))
	if err != nil {
		t.Fatalf("switching %s to args %q: %v", controllerDeploy, want, err)
	}
	t.Logf("%s runs with args %q (mechanism %s) after %s", controllerDeploy, want, mechanismOf(want), took.Round(100*time.Millisecond))
}

// apply sets the args and waits for a controller with them to lead with mechanism.
func (c *controllerFlags) apply(ctx context.Context, args []string, mechanism string) (time.Duration, error) {
	start := time.Now()
	path := fmt.Sprintf("/spec/template/spec/containers/%d/args", c.idx)
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": path, "value": args}})
	if err != nil {
		return 0, err
	}
	if _, err := c.b.client.AppsV1().Deployments(kruiseNamespace).Patch(ctx, controllerDeploy, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return 0, err
	}
	if _, err := c.b.waitController(ctx, args, mechanism); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// mechanismOf is the sidecar-termination mechanism args select.
func mechanismOf(args []string) string {
	m := "phase"
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, sidecarFlag+"="); ok {
			m = v
		}
	}
	return m
}

// controllerArgs returns the kruise-controller container's args and its index in the pod spec.
func (b *env) controllerArgs(ctx context.Context) ([]string, int, error) {
	d, err := b.client.AppsV1().Deployments(kruiseNamespace).Get(ctx, controllerDeploy, metav1.GetOptions{})
	if err != nil {
		return nil, 0, err
	}
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == controllerContainer {
			return c.Args, i, nil
		}
	}
	return nil, 0, fmt.Errorf("%s/%s has no container named %s", kruiseNamespace, controllerDeploy, controllerContainer)
}

// waitController waits, each stage within rolloutTimeout and reporting what it last saw if it
// times out, until
//  1. the Deployment has rolled out: every replica updated and available, each of its pods
//     running args and Ready, no other pod left;
//  2. the leader-election Lease names one of these pods;
//  3. that pod has logged the sidecar terminator's "Started workers" line with mechanism.
//
// It returns the leading pod.
func (b *env) waitController(ctx context.Context, args []string, mechanism string) (string, error) {
	var pods []string
	if _, err := framework.Poll(ctx, rolloutTimeout, func(ctx context.Context) (bool, string, error) {
		d, err := b.client.AppsV1().Deployments(kruiseNamespace).Get(ctx, controllerDeploy, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, "", err
		}
		list, err := b.client.CoreV1().Pods(kruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, "", err
		}
		pods = pods[:0]
		ok := rolledOut(d)
		var seen []string
		for i := range list.Items {
			p := &list.Items[i]
			current := p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && slices.Equal(podArgs(p), args) && framework.PodReady(p)
			if current {
				pods = append(pods, p.Name)
			} else {
				ok = false
			}
			seen = append(seen, fmt.Sprintf("%s(%s ready=%t wantArgs=%t deleting=%t)", p.Name, p.Status.Phase, framework.PodReady(p),
				slices.Equal(podArgs(p), args), p.DeletionTimestamp != nil))
		}
		ok = ok && int32(len(pods)) == ptr.Deref(d.Spec.Replicas, 1)
		s := d.Status
		return ok, fmt.Sprintf("generation %d observed %d; replicas %d updated %d available %d of %d; pods %s", d.Generation,
			s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1), strings.Join(seen, " ")), nil
	}); err != nil {
		return "", fmt.Errorf("rollout of %s with args %q: %w", controllerDeploy, args, err)
	}

	var leader string
	if _, err := framework.Poll(ctx, rolloutTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := b.client.CoordinationV1().Leases(kruiseNamespace).Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		pod, _, _ := strings.Cut(holder, "_") // <pod name>_<uuid>; pod names have no underscore
		desc := fmt.Sprintf("Lease holder %q (renewed %v), pods %v", holder, l.Spec.RenewTime, pods)
		if !slices.Contains(pods, pod) {
			return false, desc, nil
		}
		leader = pod
		return true, desc, nil
	}); err != nil {
		return "", fmt.Errorf("%s with args %q leading: %w", controllerDeploy, args, err)
	}

	if _, err := framework.Poll(ctx, rolloutTimeout, func(ctx context.Context) (bool, string, error) {
		logs, err := b.client.CoreV1().Pods(kruiseNamespace).GetLogs(leader, &corev1.PodLogOptions{Container: controllerContainer}).DoRaw(ctx)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		for _, line := range strings.Split(string(logs), "\n") {
			if strings.Contains(line, `"Started workers"`) && strings.Contains(line, `controller="sidecarterminator"`) {
				if !strings.Contains(line, `mechanism="`+mechanism+`"`) {
					return false, "", fmt.Errorf("pod %s started the terminator with another mechanism than %s: %s", leader, mechanism, line)
				}
				return true, line, nil
			}
		}
		return false, fmt.Sprintf("pod %s has not logged the sidecar terminator's \"Started workers\" yet", leader), nil
	}); err != nil {
		return "", fmt.Errorf("the sidecar terminator of %s: %w", leader, err)
	}
	return leader, nil
}

// podArgs is the args of the pod's controller container.
func podArgs(p *corev1.Pod) []string {
	for _, c := range p.Spec.Containers {
		if c.Name == controllerContainer {
			return c.Args
		}
	}
	return nil
}

// rolledOut is `kubectl rollout status`'s test: the latest spec is observed, every replica is
// updated and available, and no old one is left.
func rolledOut(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	return d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want &&
		d.Status.Replicas == want &&
		d.Status.AvailableReplicas == want
}
