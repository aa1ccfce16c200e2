package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
)

// createWorkers bounds how many pods are created at once.
const createWorkers = 16

// manage keeps one pod on every node that should run one: it deletes the pods released by their
// preDelete hook, ended pods, surplus pods and pods on nodes that may not keep them, and creates
// pods on nodes lacking one (at most burstReplicas, and within the partition with
// partitionedScaling). It reports whether it wrote anything; the update then waits for the next
// pass, when the cache shows the writes.
func (c *Controller) manage(ctx context.Context, p *pass) (bool, error) {
	acted := false
	var errs []error
	for _, n := range p.nodes {
		for _, pod := range n.Pods {
			if PreparingDelete(pod) && !Terminating(pod) {
				wrote, err := c.removePod(ctx, p, pod)
				acted = acted || wrote
				errs = append(errs, err)
			}
		}
	}
	hash := p.history.updateHash()
	plan := PlanManage(p.nodes, ManageOptions{UpdateRevision: hash, MinReadySeconds: p.ds.Spec.MinReadySeconds, Now: p.now, Surge: p.budget.MaxSurge > 0})
	for _, pod := range plan.Ended {
		if wrote, err := c.deleteEnded(ctx, p, pod); wrote || err != nil {
			acted = true
			errs = append(errs, err)
		}
	}
	for _, pod := range plan.Delete {
		if PreparingDelete(pod) {
			continue // done above
		}
		wrote, err := c.removePod(ctx, p, pod)
		acted = acted || wrote
		errs = append(errs, err)
	}
	create := plan.Create
	if ss := p.ds.Spec.ScaleStrategy; ss != nil && ss.PartitionedScaling {
		updated, desired := 0, 0
		for _, n := range p.nodes {
			if n.Gone || !n.Eligibility.ShouldRun {
				continue
			}
			desired++
			if u, _, ok := PodsOnNode(n.Pods, hash); ok && u != nil {
				updated++
			}
		}
		create = LimitCreates(create, updated, desired, p.budget.Partition, true)
	}
	if len(create) > 0 {
		acted = true
		errs = append(errs, c.createPods(ctx, p, create))
	}
	return acted, errors.Join(errs...)
}

// deleteEnded deletes a node's failed or succeeded pod unless the node is in its backoff; the
// node gets a new pod once the pod is gone. It reports whether it wrote.
func (c *Controller) deleteEnded(ctx context.Context, p *pass, pod *corev1.Pod) (bool, error) {
	key := p.key + "/" + nodefit.TargetNode(pod)
	now := c.clock.Now()
	if c.failedPods.IsInBackOffSinceUpdate(key, now) {
		p.after(c.failedPods.Get(key))
		return false, nil
	}
	c.failedPods.Next(key, now)
	c.recorder.Eventf(p.ds, corev1.EventTypeWarning, ReasonFailedDaemonPod, "Found %s daemon pod %s on node %s, will try to kill it",
		pod.Status.Phase, pod.Name, nodefit.TargetNode(pod))
	return true, c.deletePod(ctx, p, pod)
}

// createPods creates a pod of the update revision on each node, at most burstReplicas of them.
func (c *Controller) createPods(ctx context.Context, p *pass, nodes []string) error {
	if len(nodes) > p.budget.Burst {
		nodes = nodes[:p.budget.Burst]
	}
	hash := p.history.updateHash()
	tpl := p.history.template(hash)
	if tpl == nil {
		tpl = &p.ds.Spec.Template
	}
	pods := make([]*corev1.Pod, len(nodes))
	podNames := make([]string, len(nodes))
	for i, n := range nodes {
		pods[i] = NewPod(PodRecipe{DaemonSet: p.ds, Template: tpl, Hash: hash}, n)
		podNames[i] = pods[i].Name
	}
	c.expect.Expect(p.key, expectations.Create, expectations.Pods, podNames...)
	var mu sync.Mutex
	var errs []error
	workqueue.ParallelizeUntil(ctx, createWorkers, len(pods), func(i int) {
		pod := pods[i]
		_, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			c.recorder.Eventf(p.ds, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
			klog.FromContext(ctx).V(2).Info("Created pod", "pod", klog.KObj(pod), "node", nodes[i])
			return
		}
		c.expect.Observe(p.key, expectations.Create, expectations.Pods, pod.Name)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return // the namespace is going away
		}
		c.recorder.Eventf(p.ds, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		mu.Lock()
		errs = append(errs, fmt.Errorf("creating a pod for node %s: %w", nodes[i], err))
		mu.Unlock()
	})
	return errors.Join(errs...)
}
