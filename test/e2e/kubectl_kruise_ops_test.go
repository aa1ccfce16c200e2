//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The kubectl-kruise plugin's recreate, pull, describe and migrate, run as a user runs them,
// against real objects. They need no redeploy (run them under the shared lock).

// kubectlKruise returns a runner of the plugin (built by framework.KubectlKruise) against the
// cluster in KUBECONFIG: it returns stdout and stderr apart, for the tests that assert on each,
// and the exit code, and logs all three.
func kubectlKruise(ctx context.Context, t *testing.T) func(args ...string) (string, string, int) {
	t.Helper()
	plugin := framework.KubectlKruise(t)
	return func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := plugin.Command(ctx, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("running kubectl-kruise %s: %v", strings.Join(args, " "), err)
		}
		t.Logf("kubectl-kruise %s: exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		return stdout.String(), stderr.String(), code
	}
}

// createdName is the name in the first line of a create's output, `kind.group/NAME created`.
func createdName(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^[a-z.]+/(\S+) created$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no `kind/name created` line in:\n%s", out)
	}
	return m[1]
}

func requireContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}

// `recreate --wait` recreates the container (restart count +1) and prints its phases;
// `describe crr/NAME` shows the container's state and the request's Events.
func TestKubectlKruiseRecreate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-recreate")
	before := f.RunningBusyboxPod(ctx, t, ns, "web", "main", "side")
	run := kubectlKruise(ctx, t)

	out, _, code := run("-n", ns, "recreate", "pod/web", "-c", "main", "--wait", "--timeout", "2m")
	if code != 0 {
		// The request's own account of what happened, logged by the runner.
		run("-n", ns, "describe", "crr/"+createdName(t, out))
		t.Fatalf("recreate --wait exited %d", code)
	}
	requireContains(t, "recreate --wait output", out, "container main: Succeeded\n", "completed: 1 container recreated")
	after := getPod(ctx, t, f, ns, "web")
	if b, a := containerStatus(before, "main"), containerStatus(after, "main"); a.RestartCount != b.RestartCount+1 {
		t.Errorf("main restartCount %d, want %d", a.RestartCount, b.RestartCount+1)
	}
	if b, a := containerStatus(before, "side"), containerStatus(after, "side"); a.RestartCount != b.RestartCount {
		t.Errorf("side restartCount %d, want %d (not recreated)", a.RestartCount, b.RestartCount)
	}

	name := createdName(t, out)
	desc, _, code := run("-n", ns, "describe", "crr/"+name)
	if code != 0 {
		t.Fatalf("describe crr exited %d", code)
	}
	requireContains(t, "describe crr", desc, "Pod:", "Phase:", "Completed", "Events:")
	if !regexp.MustCompile(`(?m)^\s+main\s+Succeeded\s+true\s`).MatchString(desc) {
		t.Errorf("describe crr has no row `main Succeeded true`:\n%s", desc)
	}

	// A container the pod does not have is refused before anything is created.
	_, stderr, code := run("-n", ns, "recreate", "pod/web", "-c", "nope")
	// (The error is logged by component-base's cli.Run, which quotes it.)
	if code == 0 || !strings.Contains(stderr, "has no container") || !strings.Contains(stderr, "nope") {
		t.Errorf("recreate of a missing container: exit %d, stderr %q", code, stderr)
	}
}

// `pull --wait` of an image the registry lacks fails on the node with the reason and exits
// non-zero; of one it has succeeds; `describe imagepulljob/NAME` lists the failed node and why.
func TestKubectlKruisePull(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-pull")
	// The node with a kubelet and a kruise-daemon: other tests add kubelet-less nodes meanwhile.
	node := framework.NodeName()
	run := kubectlKruise(ctx, t)

	missing := f.Image("public/kk-missing-" + rand.String(8) + ":x")
	out, stderr, code := run("-n", ns, "pull", missing, "--nodes", node, "--wait", "--timeout", "3m")
	if code == 0 {
		t.Fatalf("pull of a missing image exited 0")
	}
	requireContains(t, "pull output", out, node+": Failed")
	requireContains(t, "pull error", stderr, "failed on 1 of 1 node", node+": NotFound")
	failedJob := createdName(t, out)

	out, _, code = run("-n", ns, "pull", f.Image("public/busybox:1.35"), "--all-nodes", "--wait", "--timeout", "3m")
	if code != 0 {
		t.Fatalf("pull of busybox exited %d", code)
	}
	requireContains(t, "pull output", out, node+": Succeeded", "completed:")

	desc, _, code := run("-n", ns, "describe", "imagepulljob/"+failedJob)
	if code != 0 {
		t.Fatalf("describe imagepulljob exited %d", code)
	}
	requireContains(t, "describe imagepulljob", desc, "Failed Nodes:", "Events:", missing)
	if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(node) + `\s+NotFound\s`).MatchString(desc) {
		t.Errorf("describe imagepulljob has no row `%s NotFound`:\n%s", node, desc)
	}
}

// readyCounter follows the pods of a selector and records the fewest that were ready (and not
// being deleted) at any point, across every owner.
type readyCounter struct {
	mu    sync.Mutex
	ready map[string]bool
	min   int
	done  chan struct{}
}

func watchReadyPods(ctx context.Context, t *testing.T, f *framework.Framework, ns, selector string) *readyCounter {
	t.Helper()
	list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	c := &readyCounter{ready: map[string]bool{}, done: make(chan struct{})}
	for i := range list.Items {
		c.ready[list.Items[i].Name] = servesTraffic(&list.Items[i])
	}
	c.min = c.count()
	w, err := f.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	go func() {
		defer close(c.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(c.ready, pod.Name)
			} else {
				c.ready[pod.Name] = servesTraffic(pod)
			}
			c.min = min(c.min, c.count())
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *readyCounter) count() int {
	n := 0
	for _, r := range c.ready {
		if r {
			n++
		}
	}
	return n
}

func (c *readyCounter) fewest() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.min
}

func servesTraffic(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && framework.PodReady(pod)
}

// `migrate deployment/NAME --to cloneset` moves a 2-replica Deployment to a CloneSet with never
// fewer than 2-maxUnavailable (1) ready pods; the Deployment is kept at 0 replicas.
// `describe cloneset/NAME` then shows its revision and pods.
func TestKubectlKruiseMigrate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-migrate")
	labels := map[string]string{"app": "kk-web"}
	pod := f.BusyboxPod(ns, "", "main")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			}},
		},
	}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "deployment web available", func(ctx context.Context) (bool, string, error) {
		d, err := f.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return d.Status.AvailableReplicas == 2 && d.Status.ObservedGeneration == d.Generation, fmt.Sprintf("%d available", d.Status.AvailableReplicas), nil
	})
	run := kubectlKruise(ctx, t)

	out, _, code := run("-n", ns, "migrate", "deployment/web", "--dry-run=client")
	if code != 0 {
		t.Fatalf("migrate --dry-run exited %d", code)
	}
	requireContains(t, "migrate --dry-run", out, "kind: CloneSet", "replicas: 2", "kubectl.kruise.io/migrated-from: Deployment/web")

	counter := watchReadyPods(ctx, t, f, ns, "app=kk-web")
	out, _, code = run("-n", ns, "migrate", "deployment/web", "--to", "cloneset", "--timeout", "3m")
	if code != 0 {
		t.Fatalf("migrate exited %d", code)
	}
	requireContains(t, "migrate output", out, "cloneset.apps.kruise.io/web created", "deployment.apps/web scaled to 0", "kubectl delete deployment.apps web")

	// Wait for the Deployment's pods to be gone, then check the fewest ready pods seen.
	framework.WaitFor(ctx, t, 2*time.Minute, "only the CloneSet's 2 pods left, ready", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=kk-web"})
		if err != nil {
			return false, "", err
		}
		var owners []string
		ready := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if ref := metav1.GetControllerOf(p); ref != nil {
				owners = append(owners, ref.Kind)
			}
			if servesTraffic(p) {
				ready++
			}
		}
		return len(pods.Items) == 2 && ready == 2 && len(owners) == 2 && owners[0] == "CloneSet" && owners[1] == "CloneSet", fmt.Sprintf("owners %v, %d ready", owners, ready), nil
	})
	if fewest := counter.fewest(); fewest < 1 {
		t.Errorf("ready pods fell to %d during the migration, want never below 1 (2 replicas, maxUnavailable 1)", fewest)
	} else {
		t.Logf("fewest ready pods during the migration: %d", fewest)
	}
	got, err := f.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment is gone: %v", err)
	}
	if *got.Spec.Replicas != 0 {
		t.Errorf("deployment replicas %d, want 0", *got.Spec.Replicas)
	}

	desc, _, code := run("-n", ns, "describe", "cloneset/web")
	if code != 0 {
		t.Fatalf("describe cloneset exited %d", code)
	}
	requireContains(t, "describe cloneset", desc, "Revisions:", "current,update", "Pods:", "2 desired | 2 total", "Events:")
}
