//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/nodesim"
)

// The budget webhooks' names in kruise's validating configuration (deploy/): pod DELETE (and
// UPDATE), and pods/eviction CREATE.
const (
	pubPodWebhook   = "vpod.kb.io"
	pubEvictWebhook = "vpodeviction.kb.io"
	// pubArmLabel selects a pod's budget: the two budgets select its values "charged" and
	// "refused"; no budget selects "uncovered".
	pubArmLabel = "bench.kruise.io/pub-arm"
)

// pubPods is the number of samples per arm and operation; pubChunk the samples per arm and
// operation between two switches of the configuration; pubFillers the ready pods that keep
// room in the charged arm's budget.
var (
	pubPods    = envInt("BENCH_PUB_PODS", 100)
	pubChunk   = envInt("BENCH_PUB_CHUNK", 25)
	pubFillers = envInt("BENCH_PUB_FILLERS", 2*pubChunk+10)
)

type pubArm string

const (
	pubNone    pubArm = "no budget webhook configured"
	pubNotSent pubArm = "configured, pod no budget covers"
	pubCharged pubArm = "covered, allowed and charged"
	pubRefused pubArm = "covered, refused (budget exhausted)"
)

// pubArmValue is the pod label of an arm.
var pubArmValue = map[pubArm]string{pubNone: "uncovered", pubNotSent: "uncovered", pubCharged: "charged", pubRefused: "refused"}

type pubOp string

const (
	pubDelete pubOp = "DELETE"
	pubEvict  pubOp = "EVICT"
)

// pubSample is one timed call.
type pubSample struct {
	arm    pubArm
	op     pubOp
	pod    string
	t0, t1 time.Time
}

func (s pubSample) call() time.Duration { return s.t1.Sub(s.t0) }

// pubBench is the state of one TestPUBLatency run.
type pubBench struct {
	e *env
	// timed makes the timed calls: no client-side rate limit, so that the setup's requests
	// never delay one.
	timed kubernetes.Interface
	node  string
	// refusedAlive: the refused arm's pods of the current block (Ready, counted by its budget).
	refusedAlive int
	// toClean are the pods of the current block, removed between blocks.
	toClean []string
}

// TestPUBLatency measures what the PodUnavailableBudget webhooks add to a pod's DELETE and to
// its eviction (policy/v1 Eviction create): the call's latency on the client clock, one pod at a
// time, for pods with no budget webhook configured at all, pods no budget covers (the
// configuration's matchConditions do not send them), pods a budget with room covers (the
// admission writes the charge into the budget's status before answering) and pods whose budget
// is exhausted (refused). Pods are bound to a Node with no kubelet that the run creates, and made
// Running and Ready by the benchmark's own status writes. It also reads the API server's and
// kruise's histograms of the webhook calls, and checks from the audit log that the charges were
// written inside the calls.
func TestPUBLatency(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-pub", "bench-pub")
	b := &pubBench{e: e, timed: unlimitedClient(t)}
	cfgs := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	conf, err := cfgs.Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kruise's validating webhook configuration is not installed (make deploy): %v", err)
	}
	for _, n := range []string{pubPodWebhook, pubEvictWebhook} {
		if !slices.ContainsFunc(conf.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == n }) {
			t.Fatalf("%s has no webhook %s: deploy a kruise with the PodUnavailableBudget webhooks", conf.Name, n)
		}
	}

	b.startNode(ctx, t)
	// Cleanups run last first: the pods go before the Node, both before the namespace.
	t.Cleanup(func() { b.cleanAll(t) })
	b.createBudgets(ctx, t)
	probe := b.newPod(ctx, t, pubRefused)
	for range pubFillers {
		b.newPod(ctx, t, pubCharged)
	}
	b.toClean = nil // fillers and the probe stay until the end
	b.waitBudgets(ctx, t)

	sw := &pubSwitch{b: b, probe: probe, cfgs: cfgs}
	// The budgets exist before the entries are saved: the scope controller has written their
	// selectors into the matchConditions (the probe's refusal shows it), so the saved entries
	// are current and restoring them changes nothing else.
	if err := sw.wait(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := sw.save(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sw.removed {
			if err := sw.restore(context.Background()); err != nil {
				t.Errorf("%v", err)
			}
		}
	})

	ops := []pubOp{pubDelete, pubEvict}
	configured := []pubArm{pubNotSent, pubCharged, pubRefused}
	var samples []pubSample
	run := func(a pubArm, op pubOp, timed bool) {
		t.Helper()
		s, err := b.sample(ctx, t, a, op)
		if err != nil {
			t.Fatalf("%s %s: %v", a, op, err)
		}
		if timed {
			samples = append(samples, s)
		}
		t.Logf("%-14s %-6s %-36s %7.2f ms", s.pod, op, a, float64(s.call().Microseconds())/1000)
	}

	// Warm-up: each arm and operation once.
	for _, a := range configured {
		for _, op := range ops {
			run(a, op, false)
		}
	}
	if err := sw.remove(ctx); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		run(pubNone, op, false)
	}
	if err := sw.restore(ctx); err != nil {
		t.Fatal(err)
	}
	b.clean(ctx, t)

	// m: the configured blocks; mNone: the blocks with no budget webhook configured.
	var m, mNone pubHists
	start := time.Now()
	for done := 0; done < pubPods; {
		n := min(pubChunk, pubPods-done)
		before, err := b.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for k := range n {
			for j := range configured {
				for _, op := range ops {
					run(configured[(done+k+j)%len(configured)], op, true)
				}
			}
		}
		after, err := b.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m = m.add(after.minus(before))
		b.clean(ctx, t)

		if err := sw.remove(ctx); err != nil {
			t.Fatal(err)
		}
		before, err = b.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			for _, op := range ops {
				run(pubNone, op, true)
			}
		}
		after, err = b.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mNone = mNone.add(after.minus(before))
		if err := sw.restore(ctx); err != nil {
			t.Fatal(err)
		}
		b.clean(ctx, t)
		done += n
	}
	t.Logf("measured in %s", time.Since(start).Round(time.Second))
	charges, err := chargesInCalls(samples, e.ns)
	if err != nil {
		t.Errorf("reading the audit log: %v", err)
	}
	reportPUB(t, samples, m, mNone, charges)
}

// unlimitedClient is a client of $KUBECONFIG without a client-side rate limit.
func unlimitedClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pubBudgetName is the budget of an arm's pods.
func pubBudgetName(a pubArm) string { return "bench-" + pubArmValue[a] }

// createBudgets creates the two budgets. The pods have no workload, so each counts the replicas
// pub.kruise.io/protect-total-replicas says. "charged" counts the fillers and keeps one available
// (a budget that keeps nothing available charges nothing): its room is fillers − 1, more than a
// block's charges (2 × pubChunk), so no sample waits for the controller to clear the charges of
// the pods deleted before it. "refused" counts 1000 and may lose none: always exhausted.
func (b *pubBench) createBudgets(ctx context.Context, t *testing.T) {
	t.Helper()
	for a, spec := range map[pubArm]struct {
		total          int
		maxUnavailable int
	}{pubCharged: {pubFillers, pubFillers - 1}, pubRefused: {1000, 0}} {
		pub := &policyv1alpha1.PodUnavailableBudget{
			ObjectMeta: metav1.ObjectMeta{Name: pubBudgetName(a), Namespace: b.e.ns,
				Annotations: map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: strconv.Itoa(spec.total)}},
			Spec: policyv1alpha1.PodUnavailableBudgetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{pubArmLabel: pubArmValue[a]}},
				MaxUnavailable: ptr.To(intstr.FromInt(spec.maxUnavailable)),
			},
		}
		// Right after a deploy the budget webhook (vpodunavailablebudget.kb.io) may still be
		// reached through an old replica's endpoint: retry what the API server calls internal.
		var err error
		werr := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err = b.e.kruise.PolicyV1alpha1().PodUnavailableBudgets(b.e.ns).Create(ctx, pub.DeepCopy(), metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
		if werr != nil {
			t.Fatalf("creating budget %s: %v", pub.Name, err)
		}
	}
}

// waitBudgets waits until the controller has counted the fillers and the probe: the charged
// arm's budget has room for all fillers but one, the refused arm's none.
func (b *pubBench) waitBudgets(ctx context.Context, t *testing.T) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok := true
		last = ""
		for _, a := range []pubArm{pubCharged, pubRefused} {
			p, err := b.e.kruise.PolicyV1alpha1().PodUnavailableBudgets(b.e.ns).Get(ctx, pubBudgetName(a), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s := p.Status
			last += fmt.Sprintf("%s: observed %d/%d allowed %d current %d desired %d total %d; ", p.Name, s.ObservedGeneration, p.Generation,
				s.UnavailableAllowed, s.CurrentAvailable, s.DesiredAvailable, s.TotalReplicas)
			ok = ok && s.ObservedGeneration == p.Generation && s.DesiredAvailable > 0
			if a == pubCharged {
				ok = ok && s.CurrentAvailable == int32(pubFillers) && s.UnavailableAllowed == int32(pubFillers-1)
			} else {
				ok = ok && s.CurrentAvailable == 1 && s.UnavailableAllowed <= 0
			}
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("the budgets' status did not settle: %s: %v", last, err)
	}
	t.Logf("budgets settled: %s", last)
}

// startNode creates the Node the benchmark's pods are bound to: a simulated node (test/nodesim's
// label and NoSchedule taint keep everything else away), Ready, its Lease renewed by the
// benchmark so that the node-lifecycle controller never marks it (and its pods) not ready.
func (b *pubBench) startNode(ctx context.Context, t *testing.T) {
	t.Helper()
	b.node = b.e.ns + "-node"
	nodes := b.e.client.CoreV1().Nodes()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: b.node, Labels: map[string]string{nodesim.Label: b.e.ns, corev1.LabelHostname: b.node}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: nodesim.Label, Value: b.e.ns, Effect: corev1.TaintEffectNoSchedule}}},
	}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaseCtx, stopLease := context.WithCancel(context.Background())
	leaseDone := make(chan struct{})
	go func() {
		defer close(leaseDone)
		renewNodeLease(leaseCtx, b.e.client, b.node, created.UID)
	}()
	t.Cleanup(func() {
		stopLease()
		<-leaseDone
		bg := context.Background()
		if err := nodes.Delete(bg, b.node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", b.node, err)
		}
		err := b.e.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(bg, b.node, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Lease of node %s: %v", b.node, err)
		}
	})
	// Others write the new Node too (the node-lifecycle controller's taints): on the latest.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, b.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "simulated by the benchmark", LastHeartbeatTime: now, LastTransitionTime: now}}
		cur.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000")}
		cur.Status.Allocatable = cur.Status.Capacity
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("making node %s Ready: %v", b.node, err)
	}
}

// newPod creates a pod of arm a bound to the node and makes it Running and Ready.
func (b *pubBench) newPod(ctx context.Context, t *testing.T, a pubArm) string {
	t.Helper()
	pods := b.e.client.CoreV1().Pods(b.e.ns)
	// Generated names, as a workload's: the eviction webhook's condition names a selector
	// budget's pods by pattern (pkg/controller/pubscope), and pods named alike share one, so the
	// condition is not rewritten for every new pod.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pubArmValue[a] + "-", Namespace: b.e.ns, Labels: map[string]string{pubArmLabel: pubArmValue[a]}},
		Spec: corev1.PodSpec{
			NodeName:                      b.node,
			TerminationGracePeriodSeconds: ptr.To[int64](graceSeconds),
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
			Tolerations: []corev1.Toleration{
				{Key: nodesim.Label, Operator: corev1.TolerationOpExists},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
		},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod %s: %v", pod.GenerateName, err)
	}
	name := created.Name
	b.toClean = append(b.toClean, name)
	now := metav1.Now()
	status := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Ready: true, Started: ptr.To(true), Image: image, ImageID: image,
			ContainerID: "containerd://" + string(created.UID),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	// A merge patch of the status subresource: kruise-controller annotates a covered pod
	// (kruise.io/related-pub) meanwhile, which an update on the created version would conflict with.
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("making pod %s Running and Ready: %v", name, err)
	}
	return name
}

// sample makes a fresh pod of arm a and times op on it.
func (b *pubBench) sample(ctx context.Context, t *testing.T, a pubArm, op pubOp) (pubSample, error) {
	t.Helper()
	name := b.newPod(ctx, t, a)
	if a == pubRefused {
		b.refusedAlive++ // refused, it stays Ready until the block's pods are removed
	}
	if err := b.settle(ctx, a, name); err != nil {
		return pubSample{}, err
	}
	s := pubSample{arm: a, op: op, pod: name}
	s.t0 = time.Now()
	err := b.call(ctx, op, name, nil)
	s.t1 = time.Now()
	switch {
	case a == pubRefused && err == nil:
		return s, fmt.Errorf("pod %s: %s allowed, want refused by budget %s", name, op, pubBudgetName(a))
	case a == pubRefused && !strings.Contains(err.Error(), pubBudgetName(a)):
		return s, fmt.Errorf("pod %s: %s refused, but not by budget %s: %w", name, op, pubBudgetName(a), err)
	case a != pubRefused && err != nil:
		return s, fmt.Errorf("pod %s: %s: %w", name, op, err)
	}
	return s, nil
}

// call deletes or evicts pod name with the timed client.
func (b *pubBench) call(ctx context.Context, op pubOp, name string, dryRun []string) error {
	if op == pubDelete {
		return b.timed.CoreV1().Pods(b.e.ns).Delete(ctx, name, metav1.DeleteOptions{DryRun: dryRun})
	}
	return b.timed.PolicyV1().Evictions(b.e.ns).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: name, Namespace: b.e.ns},
		DeleteOptions: &metav1.DeleteOptions{DryRun: dryRun},
	})
}

// settle waits until the budget controller is done with the new pod and the pods before it, so
// that the call is timed as on a pod that has been running a while (not racing the controller's
// writes, which would also make the API server retry a DELETE's admission on the fresh pod): both
// budgets count exactly their ready pods with no charge left (the pods deleted before are
// terminating, their charges spent), and a covered pod carries kruise.io/related-pub.
func (b *pubBench) settle(ctx context.Context, a pubArm, name string) error {
	want := map[pubArm]int32{pubCharged: int32(pubFillers), pubRefused: 1 + int32(b.refusedAlive)}
	if a == pubCharged {
		want[pubCharged]++
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = ""
		for _, ba := range []pubArm{pubCharged, pubRefused} {
			p, err := b.e.kruise.PolicyV1alpha1().PodUnavailableBudgets(b.e.ns).Get(ctx, pubBudgetName(ba), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if s := p.Status; s.CurrentAvailable != want[ba] || len(s.DisruptedPods) > 0 {
				last = fmt.Sprintf("%s: currentAvailable %d (want %d), %d charges", p.Name, s.CurrentAvailable, want[ba], len(s.DisruptedPods))
				return false, nil
			}
		}
		if a != pubCharged && a != pubRefused {
			return true, nil
		}
		pod, err := b.e.client.CoreV1().Pods(b.e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Annotations[policyv1alpha1.PodRelatedPubAnnotation] != pubBudgetName(a) {
			last = "pod " + name + " not annotated yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the budget controller did not settle (%s): %w", last, err)
	}
	return nil
}

// clean removes the current block's pods: each is marked pub.kruise.io/no-protect first (the
// refused arm's would be refused again, the others may be charged again), then deleted with no
// grace (nothing runs them).
func (b *pubBench) clean(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := b.removePods(ctx, b.toClean); err != nil {
		t.Fatal(err)
	}
	b.toClean, b.refusedAlive = nil, 0
}

func (b *pubBench) removePods(ctx context.Context, names []string) error {
	pods := b.e.client.CoreV1().Pods(b.e.ns)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, policyv1alpha1.PodPubNoProtectionAnnotation))
	var errs []error
	for _, n := range names {
		_, err := pods.Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			err = pods.Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing pod %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// cleanAll removes the budgets, then every pod of the namespace, so that the namespace's
// deletion is never refused.
func (b *pubBench) cleanAll(t *testing.T) {
	ctx := context.Background()
	for _, a := range []pubArm{pubCharged, pubRefused} {
		err := b.e.kruise.PolicyV1alpha1().PodUnavailableBudgets(b.e.ns).Delete(ctx, pubBudgetName(a), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting budget %s: %v", pubBudgetName(a), err)
		}
	}
	list, err := b.e.client.CoreV1().Pods(b.e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing the pods left: %v", err)
		return
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	if err := b.removePods(ctx, names); err != nil {
		t.Errorf("%v", err)
	}
}
