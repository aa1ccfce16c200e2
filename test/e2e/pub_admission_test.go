//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Concurrent evictions and deletes of a 5-replica CloneSet's pods under maxUnavailable 1, from
// many goroutines at once: at most one pod goes until its replacement is ready, never two
// unavailable at once (a watch of the pods), and every refusal is a 429 naming the budget and
// why. A second round, once the budget has recovered, lets exactly one more go.
func TestPUBConcurrentDisruptions(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 10*time.Minute)
	ns := f.NewNamespace(ctx, t, "pub-race")
	budgetedCloneSet(ctx, t, f, kc, ns, "web", 5)
	avail := watchAvailability(ctx, t, f, ns, "web", 5)

	for round := 1; round <= 2; round++ {
		var pods []corev1.Pod
		for _, p := range clonePods(ctx, t, f, ns, "web") {
			if p.DeletionTimestamp == nil { // the last round's pod may still be terminating
				pods = append(pods, p)
			}
		}
		if len(pods) != 5 {
			t.Fatalf("round %d: %d pods, want 5", round, len(pods))
		}
		type outcome struct {
			pod, how string
			err      error
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			out   []outcome
			start = make(chan struct{})
		)
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := pods[i%len(pods)]
				<-start
				var err error
				how := "delete"
				if i%2 == 0 {
					how = "evict"
					err = f.Client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}})
				} else {
					err = f.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
				}
				mu.Lock()
				out = append(out, outcome{pod: p.Name, how: how, err: err})
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		gone := map[string]bool{}
		refused := 0
		for _, o := range out {
			switch {
			case o.err == nil:
				gone[o.pod] = true
			case apierrors.IsTooManyRequests(o.err):
				refused++
				if msg := o.err.Error(); !strings.Contains(msg, "PodUnavailableBudget "+ns+"/web") || !strings.Contains(msg, "no more unavailable pods allowed") {
					t.Errorf("round %d: %s %s refused without naming the budget and why: %v", round, o.how, o.pod, o.err)
				}
			case apierrors.IsNotFound(o.err) || apierrors.IsConflict(o.err):
				// the pod went already (its own disruption was the one allowed)
			default:
				t.Errorf("round %d: %s %s: unexpected error %v", round, o.how, o.pod, o.err)
			}
		}
		t.Logf("round %d: %d requests, pods gone %v, %d refused with 429", round, len(out), gone, refused)
		if len(gone) != 1 {
			t.Fatalf("round %d: %d pods disrupted at once (%v), want exactly 1", round, len(gone), gone)
		}
		if refused == 0 {
			t.Errorf("round %d: no request was refused", round)
		}
		waitCloneSet(ctx, t, kc, ns, "web", 5)
		waitBudgetAllows(ctx, t, kc, ns, "web", 5)
	}
	if n, when := avail.fewest(); n < 4 {
		t.Errorf("two pods were unavailable at once: %s", when)
	}
}

// kubectl drain of the node, restricted to the budgeted pods (--pod-selector): it evicts them one
// at a time, retrying the refused evictions (429, "will retry after 5s"), and completes. The
// cluster has one real node, so drain's cordon would leave the replacements Pending for ever:
// the test uncordons the node as soon as drain has cordoned it; drain has listed its pods by then
// and does not look at the node again.
func TestPUBKubectlDrain(t *testing.T) {
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 10*time.Minute)
	ns := f.NewNamespace(ctx, t, "pub-drain")
	budgetedCloneSet(ctx, t, f, kc, ns, "drain", 3)
	avail := watchAvailability(ctx, t, f, ns, "drain", 3)
	node := framework.NodeName()
	uncordon := func() {
		_, err := f.Client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(`{"spec":{"unschedulable":null}}`), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("uncordoning %s: %v", node, err)
		}
	}
	t.Cleanup(uncordon)
	originals := clonePods(ctx, t, f, ns, "drain")

	cmd := framework.KubectlCommand(ctx, t, "drain", node, "--pod-selector=app=drain", "--ignore-daemonsets", "--delete-emptydir-data",
		"--grace-period=1", "--timeout=6m")
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	framework.WaitFor(ctx, t, time.Minute, "kubectl drain cordoned the node", func(ctx context.Context) (bool, string, error) {
		n, err := f.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return n.Spec.Unschedulable, "", nil
	})
	uncordon()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kubectl drain: %v\n%s", err, output.String())
		}
	case <-ctx.Done():
		t.Fatalf("kubectl drain did not complete:\n%s", output.String())
	}
	out := output.String()
	t.Logf("kubectl drain:\n%s", out)
	for _, p := range originals {
		if !strings.Contains(out, "pod/"+p.Name+" evicted") {
			t.Errorf("drain did not evict %s", p.Name)
		}
	}
	if !strings.Contains(out, "will retry after 5s") || !strings.Contains(out, "PodUnavailableBudget "+ns+"/drain") {
		t.Errorf("drain was never refused by the budget (one pod at a time)")
	}
	if n, when := avail.fewest(); n < 2 {
		t.Errorf("two pods were unavailable at once during the drain: %s", when)
	}
}

// A pod no budget covers (another label in the budget's namespace, or a namespace without a
// budget) is deleted and evicted without kruise being asked: the pod disruption webhook's request
// counter does not move; a covered pod's delete moves it.
func TestPUBUncoveredPodsAreNotSent(t *testing.T) {
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "pub-scope")
	free := f.NewNamespace(ctx, t, "pub-free")
	one := intstr.FromInt32(1)
	if _, err := kc.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := func(ns, name, app string) {
		t.Helper()
		if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
				Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sleep", "3600"}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bare(ns, "web-1", "web")
	bare(ns, "db-1", "db")
	bare(ns, "db-2", "db")
	bare(free, "web-1", "web")
	bare(free, "web-2", "web")

	before := disruptionRequests(ctx, t, f)
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "db-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "db-2", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.CoreV1().Pods(free).Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.CoreV1().Pods(free).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: free}}); err != nil {
		t.Fatal(err)
	}
	if after := disruptionRequests(ctx, t, f); after != before {
		t.Errorf("uncovered pods reached kruise: pod-disruption-budget requests %v -> %v", before, after)
	}
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(ctx, t, time.Minute, "the covered pod's delete counted", func(ctx context.Context) (bool, string, error) {
		after := disruptionRequests(ctx, t, f)
		return after > before, fmt.Sprintf("%v -> %v", before, after), nil
	})
}

// With PodUnavailableBudgetUpdateGate (on in the local overlay), an image update of a covered pod
// restarts its container and is charged: the first is allowed, a second pod's is refused with 429
// naming the budget (and a Warning Event on the pod) until the first is available again; a label
// change is never sent.
func TestPUBImageUpdateOfCoveredPods(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "pub-update")
	budgetedCloneSet(ctx, t, f, kc, ns, "upd", 3)
	variant := f.BusyboxVariant(t)
	pods := clonePods(ctx, t, f, ns, "upd")
	setImage := func(name string) error {
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"main","image":%q}]}}`, variant)
		_, err := f.Client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err := setImage(pods[0].Name); err != nil {
		t.Fatalf("the first image update: %v", err)
	}
	err := setImage(pods[1].Name)
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "PodUnavailableBudget "+ns+"/upd") {
		t.Fatalf("a second pod's image update while the first restarts: %v, want 429 naming the budget", err)
	}
	f.WaitPodEvent(ctx, t, &pods[1], "PubPreventPodUpdate", time.Minute, "PodUnavailableBudget "+ns+"/upd")
	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, pods[1].Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("a label change is never sent: %v", err)
	}
	framework.WaitFor(ctx, t, pubTimeout, "the second image update allowed once the first pod is back", func(ctx context.Context) (bool, string, error) {
		err := setImage(pods[1].Name)
		if apierrors.IsTooManyRequests(err) {
			return false, err.Error(), nil
		}
		return err == nil, "", err
	})
}
