package daemonset

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// Event reasons (the built-in DaemonSet's and OpenKruise's names).
const (
	ReasonSuccessfulCreate        = "SuccessfulCreate"
	ReasonFailedCreate            = "FailedCreate"
	ReasonSuccessfulDelete        = "SuccessfulDelete"
	ReasonFailedDelete            = "FailedDelete"
	ReasonFailedDaemonPod         = "FailedDaemonPod"
	ReasonPreparingDelete         = "PreparingDelete"
	ReasonInvalidSpec             = "InvalidSpec"
	ReasonSuccessfulUpdateInPlace = "SuccessfulUpdatePodInPlace"
	ReasonFailedUpdateInPlace     = "FailedUpdatePodInPlace"
)

// pass is what one reconcile of a DaemonSet works from.
type pass struct {
	ds      *appsv1beta1.DaemonSet
	key     string
	history *history
	nodes   []NodeState
	budget  Budget
	// desired counts the nodes that should run a pod, which the budget is resolved against.
	desired int
	now     time.Time
	// recheck is when to look again for a reason found during the pass (0: none).
	recheck time.Duration
	// waits are the pods a PodUnavailableBudget held back in this pass. budgetSettled: the pass
	// got to the rolling update, so no waits means none are left.
	waits         budgetwait.Waits
	budgetSettled bool
	// noResize is why pods cannot be resized now, "" when they can (Config.Resize).
	noResize string
}

func (p *pass) after(d time.Duration) { p.recheck = durations.Shortest(p.recheck, d) }

// allPods are the pods of every node of the pass.
func (p *pass) allPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, n := range p.nodes {
		pods = append(pods, n.Pods...)
	}
	return pods
}

// written puts a pod as the controller just wrote it in place of its cached copy, so that the
// status of this pass counts it as it is now (a pod whose in-place update started is not ready).
func (p *pass) written(pod *corev1.Pod) {
	for i := range p.nodes {
		for j, cur := range p.nodes[i].Pods {
			if cur.UID == pod.UID && cur.Name == pod.Name {
				p.nodes[i].Pods[j] = pod
				return
			}
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	ds, err := c.daemonSets.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expect.Forget(key)
		c.budgetWaits.Forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if ds.DeletionTimestamp != nil {
		return 0, nil // the garbage collector deletes its pods
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("daemonSet", klog.KObj(ds)))
	if ok, recheck := c.expect.Satisfied(ctx, key); !ok {
		return recheck, nil
	}
	p, err := c.newPass(ctx, ds, key)
	if err != nil || p == nil {
		return 0, err
	}
	// Pre-download goes first so that a failure to manage pods does not hold it back, and
	// a failure of its own does not hold the DaemonSet back: it is returned at the end.
	preDownloadErr := c.preDownload(ctx, p)
	acted, err := c.manage(ctx, p)
	if c.podsSettled(ctx, p) {
		refreshed, refreshErr := c.refreshInPlace(ctx, p)
		if !acted && !refreshed && err == nil && refreshErr == nil {
			acted, err = c.update(ctx, p)
		}
		acted, err = acted || refreshed, errors.Join(err, refreshErr)
	}
	if p.waits.Len() > 0 {
		p.after(budgetwait.RetryAfter)
	}
	if p.waits.Len() > 0 || p.budgetSettled {
		c.budgetWaits.Report(ctx, c.recorder, p.ds, key, p.waits.List())
	}
	if statusErr := c.writeStatus(ctx, p); err == nil {
		err = statusErr
	}
	if err == nil {
		err = preDownloadErr
	}
	if err != nil {
		return 0, err
	}
	if !acted {
		if err := c.history.TruncateHistory(ctx, p.history.Revisions, p.ds.Spec.RevisionHistoryLimit, p.allPods()); err != nil {
			return 0, err
		}
	}
	for _, n := range p.nodes {
		for _, pod := range n.Pods {
			p.after(availableIn(pod, ds.Spec.MinReadySeconds, p.now))
		}
	}
	return p.recheck, nil
}

// newPass reads what a reconcile needs; nil (and no error) when the spec cannot be acted on.
func (c *Controller) newPass(ctx context.Context, ds *appsv1beta1.DaemonSet, key string) (*pass, error) {
	selector, problem := ownership.PodSelector("DaemonSet", ds.Spec.Selector, ds.Spec.Template.Labels)
	if problem != "" {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, ReasonInvalidSpec, "%s", problem)
		return nil, nil
	}
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return nil, err
	}
	h, err := c.resolveHistory(ctx, ds, selector)
	if err != nil {
		return nil, err
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	states := NodeStates(nodes, &ds.Spec.Template, pods)
	desired := 0
	for _, n := range states {
		if n.Eligibility.ShouldRun && !n.Gone {
			desired++
		}
	}
	budget, err := ResolveBudget(ds, desired)
	if err != nil {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, ReasonInvalidSpec, "%v", err)
		return nil, nil
	}
	return &pass{ds: ds, key: key, history: h, nodes: states, budget: budget, desired: desired, now: c.clock.Now(),
		noResize: c.resize.NoResize(ctx)}, nil
}

// NodeStates pairs every node with its eligibility for template and the pods for it; pods for a
// node that does not exist make a Gone state; pods that name no node are left out (the scheduler
// has not placed a pod this controller did not pin).
func NodeStates(nodes []*corev1.Node, template *corev1.PodTemplateSpec, pods []*corev1.Pod) []NodeState {
	byNode := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if n := nodefit.TargetNode(pod); n != "" {
			byNode[n] = append(byNode[n], pod)
		}
	}
	out := make([]NodeState, 0, len(nodes))
	for _, node := range nodes {
		ps := byNode[node.Name]
		SortPods(ps)
		out = append(out, NodeState{Name: node.Name, Labels: node.Labels, Eligibility: NodeEligibility(node, template), Pods: ps})
		delete(byNode, node.Name)
	}
	for name, ps := range byNode {
		SortPods(ps)
		out = append(out, NodeState{Name: name, Gone: true, Pods: ps})
	}
	return out
}
