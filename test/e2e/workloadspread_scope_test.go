//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Pods no WorkloadSpread targets are never sent to kruise: with a WorkloadSpread over a CloneSet
// in the namespace, a bare pod that looks like the CloneSet's and the pods of a Deployment nobody
// targets are created without kruise's WorkloadSpread webhooks counting a request, and as they
// were written; the CloneSet's next pod moves the counter. Not parallel: the counter is
// kruise-wide, and the parallel tests start after the sequential ones.
func TestWorkloadSpreadUntargetedPodsAreNotSent(t *testing.T) {
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "ws-scope")
	subsets := []spreadSubset{
		{name: "a", value: ns + "-a", max: ptr.To(intstr.FromInt32(1))},
		{name: "b", value: ns + "-b"},
	}
	f.SimNodes(ctx, t, "scope", 1, map[string]string{wsPoolLabel: subsets[0].value})
	f.SimNodes(ctx, t, "scope", 1, map[string]string{wsPoolLabel: subsets[1].value})
	w := newSpreadWorkload(ctx, t, f, kc, "CloneSet", ns, "web", 0)
	newWorkloadSpread(ctx, t, kc, w, "scope", wsPoolLabel, subsets, appsv1alpha1.WorkloadSpreadScheduleStrategy{})
	deleteWorkloadSpreadAtEnd(t, kc, ns, "scope")
	waitInjected(ctx, t, f, w, "scope")
	w.scale(ctx, t, 1)
	waitSpread(ctx, t, f, kc, w, "scope", wsPoolLabel, subsets, map[string]int{"a": 1}, 1)

	before := spreadRequests(ctx, t, f)
	bare := f.BusyboxPod(ns, "bare", "main")
	bare.Labels = map[string]string{"app": "web-lookalike", "tier": "web"}
	created, err := f.Client.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a bare pod: %v", err)
	}
	f.DeletePodNow(t, ns, bare.Name)
	other := newSpreadWorkload(ctx, t, f, kc, "Deployment", ns, "other", 2)
	var otherPods []corev1.Pod
	framework.WaitFor(ctx, t, time.Minute, "the untargeted Deployment's 2 pods created", func(ctx context.Context) (bool, string, error) {
		var err error
		otherPods, err = other.pods(ctx)
		return len(otherPods) == 2, fmt.Sprintf("%d pods", len(otherPods)), err
	})
	if after := spreadRequests(ctx, t, f); after != before {
		t.Errorf("untargeted pods reached kruise's WorkloadSpread webhooks: requests %v -> %v", before, after)
	}
	for _, p := range append(otherPods, *created) {
		if v, ok := p.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation]; ok {
			t.Errorf("untargeted pod %s annotated %s", p.Name, v)
		}
		if p.Spec.Affinity != nil {
			t.Errorf("untargeted pod %s was given an affinity: %+v", p.Name, p.Spec.Affinity)
		}
	}

	w.scale(ctx, t, 2)
	framework.WaitFor(ctx, t, time.Minute, "the CloneSet's pod create counted", func(ctx context.Context) (bool, string, error) {
		after := spreadRequests(ctx, t, f)
		return after > before, fmt.Sprintf("%v -> %v", before, after), nil
	})
}

// spreadRequests sums kruise_webhook_admission_requests_total of the webhooks named for
// WorkloadSpread over the ready controller replicas.
func spreadRequests(ctx context.Context, t *testing.T, f *framework.Framework) float64 {
	t.Helper()
	pods, err := f.ControllerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^kruise_webhook_admission_requests_total\{[^}]*webhook="[^"]*(?i:spread)[^"]*"[^}]*\} ([0-9.e+]+)$`)
	var sum float64
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
			continue
		}
		metrics, err := framework.ControllerMetrics(ctx, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(metrics, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	return sum
}

// The WorkloadSpread examples of docs/examples (docs/workloadspread.md runs them) decode into
// their kinds and are admitted as they are written: a server-side dry run of every object.
func TestWorkloadSpreadExamplesAdmitted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*time.Minute)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, file := range []string{"zones", "spot", "elastic"} {
		path := "../../docs/examples/workloadspread-" + file + ".yaml"
		kinds := map[string]int{}
		for _, obj := range exampleObjects(t, path) {
			var err error
			switch o := obj.(type) {
			case *corev1.Node:
				kinds["Node"]++
				if o.Labels[framework.SimNodeLabel] == "" || len(o.Spec.Taints) == 0 {
					t.Errorf("%s: node %s is not a tainted simulated node", path, o.Name)
				}
				_, err = f.Client.CoreV1().Nodes().Create(ctx, o, dry)
			case *appsv1alpha1.WorkloadSpread:
				kinds["WorkloadSpread"]++
				_, err = kc.AppsV1alpha1().WorkloadSpreads(o.Namespace).Create(ctx, o, dry)
			case *appsv1alpha1.CloneSet:
				kinds["workload"]++
				_, err = kc.AppsV1alpha1().CloneSets(o.Namespace).Create(ctx, o, dry)
			case *appsv1.Deployment:
				kinds["workload"]++
				_, err = f.Client.AppsV1().Deployments(o.Namespace).Create(ctx, o, dry)
			default:
				t.Errorf("%s: unexpected %T", path, obj)
			}
			if err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
		if kinds["Node"] < 2 || kinds["WorkloadSpread"] != 1 || kinds["workload"] != 1 {
			t.Errorf("%s holds %v, want simulated nodes, one WorkloadSpread and its workload", path, kinds)
		}
	}
}
