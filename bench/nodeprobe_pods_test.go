//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// The pods of the node-probe benchmark: probesPods pods of two busybox containers (c0, c1) that
// create /tmp/ready at start and then sleep. Both probes of every configuration are `cat
// /tmp/ready`, one in each container; a flip removes (or recreates) c0's file through CRI exec.
const (
	probesLabel   = "bench.kruise.io/probes"
	probeFile     = "/tmp/ready"
	flipContainer = "c0"
)

// probePod is pod i of set (the label's value: "plain" or "kubelet"); with kubeletProbes each
// container has a readiness probe `cat /tmp/ready` every second (the kubelet's floor).
func probePod(ns, set string, i int, kubeletProbes bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", set, i), Namespace: ns, Labels: map[string]string{probesLabel: set}},
		Spec: corev1.PodSpec{
			NodeName:                      footprintNode,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			// The node has no cluster DNS: with ClusterFirst the kubelet would write a
			// MissingClusterDNS Event at every sync of every pod, counted among the writes.
			DNSPolicy: corev1.DNSDefault,
		},
	}
	for _, name := range []string{"c0", "c1"} {
		c := corev1.Container{
			Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", `touch ` + probeFile + `; trap "exit 0" TERM; sleep 86400 & wait`},
		}
		if kubeletProbes {
			c.ReadinessProbe = &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", probeFile}}},
				PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
			}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	return pod
}

// createProbePods creates probesPods pods of set on the node, waits until all are Ready and
// returns them. Pods of an earlier set or run may still be terminating: it waits for room first.
func (e *env) createProbePods(ctx context.Context, t *testing.T, set string, kubeletProbes bool) []*corev1.Pod {
	t.Helper()
	if err := e.waitNodeRoom(ctx, probesPods); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range probesPods {
		if _, err := e.client.CoreV1().Pods(e.ns).Create(ctx, probePod(e.ns, set, i, kubeletProbes), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var pods []*corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: probesLabel + "=" + set})
		if err != nil {
			return false, nil
		}
		pods = pods[:0]
		for i := range l.Items {
			if podCond(&l.Items[i], corev1.PodReady) {
				pods = append(pods, &l.Items[i])
			}
		}
		return len(pods) == probesPods, nil
	})
	if err != nil {
		t.Fatalf("%d pods of set %s Ready: %d after %s: %v", probesPods, set, len(pods), time.Since(start).Round(time.Second), err)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return cmpString(a.Name, b.Name) })
	t.Logf("%d pods of set %s Ready in %s", probesPods, set, time.Since(start).Round(time.Second))
	return pods
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deleteProbePods deletes the pods of set and waits until they are gone.
func (e *env) deleteProbePods(ctx context.Context, t *testing.T, set string) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: probesLabel + "=" + set}
	if err := e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.client.CoreV1().Pods(e.ns).List(ctx, sel)
		return err == nil && len(l.Items) == 0, nil
	}); err != nil {
		t.Fatalf("pods of set %s not gone: %v", set, err)
	}
	t.Logf("pods of set %s gone in %s", set, time.Since(start).Round(time.Second))
}

// waitNodeRoom waits until the node has room for n more pods.
func (e *env) waitNodeRoom(ctx context.Context, n int) error {
	node, err := e.client.CoreV1().Nodes().Get(ctx, footprintNode, metav1.GetOptions{})
	if err != nil {
		return err
	}
	maxPods := node.Status.Allocatable.Pods().Value()
	active := 0
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		onNode, err := e.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + footprintNode})
		if err != nil {
			return false, nil
		}
		active = 0
		for _, p := range onNode.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				active++
			}
		}
		return int64(active+n) <= maxPods, nil
	})
	if err != nil {
		return fmt.Errorf("node %s runs %d pods and allows %d: no room for %d more (BENCH_PROBES_PODS): %w", footprintNode, active, maxPods, n, err)
	}
	return nil
}

// condWatch follows the benchmark's pods by an informer and records, per pod and condition
// type, the status last seen and when it was first seen (the handler's receipt time).
type condWatch struct {
	types []corev1.PodConditionType

	mu      sync.Mutex
	state   map[string]map[corev1.PodConditionType]condSeen
	updates int // Update events (each a write that changed a pod)
	notify  chan struct{}
	stop    chan struct{}
}

type condSeen struct {
	status corev1.ConditionStatus // "" when the pod has no such condition
	since  time.Time
}

// watchConds starts an informer on the pods of set in the benchmark's namespace.
func (e *env) watchConds(ctx context.Context, set string, types ...corev1.PodConditionType) (*condWatch, error) {
	w := &condWatch{types: types, state: map[string]map[corev1.PodConditionType]condSeen{},
		notify: make(chan struct{}, 1), stop: make(chan struct{})}
	pods := e.client.CoreV1().Pods(e.ns)
	sel := probesLabel + "=" + set
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return pods.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, true) },
	}); err != nil {
		return nil, err
	}
	go inf.Run(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(w.stop)
		return nil, fmt.Errorf("pod informer of set %s not synced", set)
	}
	return w, nil
}

func (w *condWatch) close() { close(w.stop) }

func (w *condWatch) observe(obj any, update bool) {
	now := time.Now()
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	if update {
		w.updates++
	}
	m := w.state[p.Name]
	if m == nil {
		m = map[corev1.PodConditionType]condSeen{}
		w.state[p.Name] = m
	}
	for _, typ := range w.types {
		var s corev1.ConditionStatus
		if c := podCondition(p, typ); c != nil {
			s = c.Status
		}
		if prev, seen := m[typ]; !seen || prev.status != s {
			m[typ] = condSeen{status: s, since: now}
		}
	}
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *condWatch) updateCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.updates
}

// waitAll waits until every pod in names has every watched condition at status, and returns
// when the last got there.
func (w *condWatch) waitAll(ctx context.Context, names []string, status corev1.ConditionStatus, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		var last time.Time
		missing := 0
		for _, n := range names {
			for _, typ := range w.types {
				s := w.state[n][typ]
				if s.status != status {
					missing++
					continue
				}
				if s.since.After(last) {
					last = s.since
				}
			}
		}
		w.mu.Unlock()
		if missing == 0 {
			return last, nil
		}
		select {
		case <-w.notify:
		case <-deadline.C:
			return last, fmt.Errorf("%d pod conditions of %d not %s after %s", missing, len(names)*len(w.types), status, timeout)
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// flipResult is one flip's probe-file change → condition latency; ok false when the condition
// did not follow within the timeout.
type flipResult struct {
	latency time.Duration
	exec    time.Duration // the CRI exec call's own duration (inside latency)
	ok      bool
}

// flip runs cmd in container c0 of each pod at once and waits until typ of each shows want.
// A flip's time is taken just before its exec call (so latency includes the exec itself).
func (w *condWatch) flip(ctx context.Context, rt cri.Runtime, pods []*corev1.Pod, ctrIDs map[types.UID]string,
	cmd []string, typ corev1.PodConditionType, want corev1.ConditionStatus, timeout time.Duration) ([]flipResult, error) {
	starts := make([]time.Time, len(pods))
	execs := make([]time.Duration, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			starts[i] = time.Now()
			res, err := rt.ExecSync(ctx, ctrIDs[p.UID], cmd, 5*time.Second)
			execs[i] = time.Since(starts[i])
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit code %d", res.ExitCode)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("exec %v in %s/%s: %w", cmd, pods[i].Name, flipContainer, err)
		}
	}
	out := make([]flipResult, len(pods))
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		pending := 0
		for i, p := range pods {
			s := w.state[p.Name][typ]
			if s.status == want && s.since.After(starts[i]) {
				out[i] = flipResult{latency: s.since.Sub(starts[i]), exec: execs[i], ok: true}
			} else {
				pending++
			}
		}
		w.mu.Unlock()
		if pending == 0 {
			return out, nil
		}
		select {
		case <-w.notify:
		case <-deadline.C:
			return out, nil // the ones not ok are reported as missed
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

// flipContainerIDs maps each pod's UID to the runtime ID of its c0.
func (e *env) flipContainerIDs(ctx context.Context, pods []*corev1.Pod) (map[types.UID]string, error) {
	ids := map[types.UID]string{}
	for _, p := range pods {
		ctrs, err := e.rt.PodContainers(ctx, string(p.UID))
		if err != nil {
			return nil, err
		}
		c, ok := cri.Newest(ctrs, flipContainer)
		if !ok {
			return nil, fmt.Errorf("pod %s has no container %s in the runtime", p.Name, flipContainer)
		}
		ids[p.UID] = c.ID
	}
	return ids, nil
}
