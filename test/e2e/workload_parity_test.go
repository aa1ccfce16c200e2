//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// parityManifest is a StatefulSet and a DaemonSet for the built-in controllers, as a user would
// have them; %[1]s is the image.
const parityManifest = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: %[1]s
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: %[1]s
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// The same StatefulSet and DaemonSet manifest applied twice with kubectl, as written (the
// built-in controllers) and with only apiVersion changed to apps.kruise.io/v1beta1 (kruise's):
// the pods are the same where the controller decides them (names, labels, hostname and
// subdomain, tolerations, node affinity, readiness gates), and so are the status counts; a
// scale-in keeps the same ordinals.
func TestWorkloadsBehaveAsTheBuiltinOnes(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 6*time.Minute)
	kubectl := framework.Kubectl(ctx, t)
	builtin, kruise := f.NewNamespace(ctx, t, "parity-builtin"), f.NewNamespace(ctx, t, "parity-kruise")
	manifest := fmt.Sprintf(parityManifest, f.Image("public/busybox:1.35"))
	dir := t.TempDir()
	for ns, text := range map[string]string{
		builtin: manifest,
		kruise:  strings.ReplaceAll(manifest, "apiVersion: apps/v1\n", "apiVersion: apps.kruise.io/v1beta1\n"),
	} {
		path := filepath.Join(dir, ns+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		kubectl("apply", "-n", ns, "-f", path)
	}

	for _, app := range []struct {
		name string
		n    int
	}{{"web", 3}, {"agent", 1}} {
		want := readyPods(ctx, t, f, builtin, app.name, app.n)
		got := readyPods(ctx, t, f, kruise, app.name, app.n)
		for i := range want {
			comparePods(t, &want[i], &got[i])
		}
	}
	compareStatus(ctx, t, kubectl, builtin, kruise, "statefulset", "web",
		"{.status.replicas} {.status.readyReplicas} {.status.currentReplicas} {.status.updatedReplicas} {.status.availableReplicas}")
	compareStatus(ctx, t, kubectl, builtin, kruise, "daemonset", "agent",
		"{.status.desiredNumberScheduled} {.status.currentNumberScheduled} {.status.numberReady} {.status.updatedNumberScheduled} {.status.numberAvailable} {.status.numberMisscheduled}")

	// Scale in: both keep the lowest ordinal.
	for _, ns := range []string{builtin, kruise} {
		kind := "statefulsets.apps"
		if ns == kruise {
			kind = "statefulsets.apps.kruise.io"
		}
		kubectl("scale", "-n", ns, kind+"/web", "--replicas=1")
	}
	want := readyPods(ctx, t, f, builtin, "web", 1)
	got := readyPods(ctx, t, f, kruise, "web", 1)
	if want[0].Name != "web-0" || got[0].Name != want[0].Name {
		t.Errorf("after scaling in to 1: built-in keeps %s, kruise keeps %s", want[0].Name, got[0].Name)
	}
}

// readyPods waits until ns has exactly n pods labelled app=name, none being deleted, all Ready,
// and returns them sorted by name.
func readyPods(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	framework.WaitFor(ctx, t, 3*time.Minute, fmt.Sprintf("%d Ready pods of %s in %s", n, name, ns), func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, "", err
		}
		pods = l.Items
		var seen []string
		ready := 0
		for i := range pods {
			seen = append(seen, fmt.Sprintf("%s ready=%t deleting=%t", pods[i].Name, framework.PodReady(&pods[i]), pods[i].DeletionTimestamp != nil))
			if framework.PodReady(&pods[i]) && pods[i].DeletionTimestamp == nil {
				ready++
			}
		}
		return len(pods) == n && ready == n, strings.Join(seen, ", "), nil
	})
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// comparePods compares what a workload controller decides of a pod: got is kruise's, want the
// built-in controller's. A DaemonSet's pods have generated names, and revision hashes are each
// controller's own: their presence is compared, not their values. Two labels are left out, as
// OpenKruise leaves them: kruise's lifecycle state (every kruise workload's pods carry it), and
// the built-in DaemonSet's pod-template-generation (from an annotation the API server writes on
// built-in DaemonSets only).
func comparePods(t *testing.T, want, got *corev1.Pod) {
	t.Helper()
	if want.GenerateName == "" && got.Name != want.Name {
		t.Errorf("pod %s: kruise named it %s", want.Name, got.Name)
	}
	labels := func(p *corev1.Pod) map[string]string {
		out := map[string]string{}
		for k, v := range p.Labels {
			switch k {
			case pub.LifecycleStateKey, "pod-template-generation":
				continue
			case "controller-revision-hash":
				v = "<set>"
			}
			out[k] = v
		}
		return out
	}
	if w, g := labels(want), labels(got); !reflect.DeepEqual(w, g) {
		t.Errorf("pod %s labels: built-in %v, kruise %v", want.Name, w, g)
	}
	if got.Spec.Hostname != want.Spec.Hostname || got.Spec.Subdomain != want.Spec.Subdomain {
		t.Errorf("pod %s: hostname/subdomain built-in %q/%q, kruise %q/%q", want.Name, want.Spec.Hostname, want.Spec.Subdomain, got.Spec.Hostname, got.Spec.Subdomain)
	}
	tolerations := func(p *corev1.Pod) []string {
		var out []string
		for _, tl := range p.Spec.Tolerations {
			out = append(out, fmt.Sprintf("%s %s %s %s", tl.Key, tl.Operator, tl.Value, tl.Effect))
		}
		slices.Sort(out)
		return out
	}
	if w, g := tolerations(want), tolerations(got); !slices.Equal(w, g) {
		t.Errorf("pod %s tolerations:\n built-in %q\n kruise   %q", want.Name, w, g)
	}
	if !reflect.DeepEqual(want.Spec.Affinity, got.Spec.Affinity) {
		t.Errorf("pod %s affinity: built-in %+v, kruise %+v", want.Name, want.Spec.Affinity, got.Spec.Affinity)
	}
	if !reflect.DeepEqual(want.Spec.ReadinessGates, got.Spec.ReadinessGates) {
		t.Errorf("pod %s readiness gates: built-in %v, kruise %v", want.Name, want.Spec.ReadinessGates, got.Spec.ReadinessGates)
	}
	if got.Spec.NodeName != want.Spec.NodeName {
		t.Errorf("pod %s: built-in on node %q, kruise on %q", want.Name, want.Spec.NodeName, got.Spec.NodeName)
	}
	owner := func(p *corev1.Pod) string {
		for _, o := range p.OwnerReferences {
			if o.Controller != nil && *o.Controller {
				return fmt.Sprintf("%s/%s blockOwnerDeletion=%t", o.Kind, o.Name, o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion)
			}
		}
		return "none"
	}
	if owner(want) != owner(got) {
		t.Errorf("pod %s controller: built-in %s, kruise %s", want.Name, owner(want), owner(got))
	}
}

// compareStatus compares the status fields of jsonpath of the built-in and kruise's object.
func compareStatus(ctx context.Context, t *testing.T, kubectl func(...string) string, builtin, kruise, kind, name, jsonpath string) {
	t.Helper()
	read := func(ns, resource string) string {
		return kubectl("get", "-n", ns, resource+"/"+name, "-o", "jsonpath="+jsonpath)
	}
	var want, got string
	framework.WaitFor(ctx, t, time.Minute, "the same status counts for "+kind+" "+name, func(ctx context.Context) (bool, string, error) {
		want, got = read(builtin, kind+"s.apps"), read(kruise, kind+"s.apps.kruise.io")
		return want == got, fmt.Sprintf("built-in %q, kruise %q (%s)", want, got, jsonpath), nil
	})
}
