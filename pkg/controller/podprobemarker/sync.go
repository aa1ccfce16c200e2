package podprobemarker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// syncNode brings the node's NodePodProbe in line with the node and its pods.
func (c *Controller) syncNode(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "node", name)
	ctx = klog.NewContext(ctx, logger)
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		node = nil
	} else if err != nil {
		return 0, err
	}
	npp, err := c.npps.Get(name)
	if apierrors.IsNotFound(err) {
		npp = nil
	} else if err != nil {
		return 0, err
	}
	if node == nil || isVirtual(node) {
		c.setProblems(name, nil)
		if npp == nil {
			return 0, nil
		}
		return 0, c.deleteNPP(ctx, node, npp)
	}

	in := nodeInput{pods: c.podsOn(name), liveness: c.liveness}
	in.markers = c.markersFor(ctx, in.pods)
	exec, next, err := c.gate.answer(ctx, questions(in))
	if err != nil {
		return 0, err
	}
	in.exec = exec
	out := desired(in)
	c.setProblems(name, out.problems)
	if len(out.livenessProblems) > 0 {
		logger.V(2).Info("Enhanced liveness probes left out", "problems", out.livenessProblems)
	}

	switch {
	case npp == nil:
		created := &appsv1alpha1.NodePodProbe{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
			Spec: out.spec,
		}
		_, err := c.kruiseClient.AppsV1alpha1().NodePodProbes().Create(ctx, created, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			logger.V(4).Info("NodePodProbe already exists; waiting for the cache")
			return next, nil
		case err != nil:
			return 0, fmt.Errorf("creating NodePodProbe %s: %w", name, err)
		}
		logger.V(2).Info("Created NodePodProbe", "pods", len(out.spec.PodProbes))
	case npp.DeletionTimestamp != nil:
		logger.V(4).Info("NodePodProbe is being deleted; waiting")
	case !apiequality.Semantic.DeepEqual(npp.Spec, out.spec):
		updated := npp.DeepCopy()
		updated.Spec = out.spec
		if _, err := c.kruiseClient.AppsV1alpha1().NodePodProbes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, nil // deleted meanwhile: its delete event brings the node back
			}
			return 0, fmt.Errorf("updating NodePodProbe %s: %w", name, err)
		}
		logger.V(2).Info("Updated NodePodProbe", "pods", len(out.spec.PodProbes))
	}
	return next, nil
}

// podsOn are the pods bound to node, by namespace and name (the questions are asked in order).
func (c *Controller) podsOn(node string) []*corev1.Pod {
	objs, err := c.podIndexer.ByIndex(nodeIndex, node)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// markersFor are the markers (not being deleted) of the pods' namespaces.
func (c *Controller) markersFor(ctx context.Context, pods []*corev1.Pod) map[string][]*marker {
	if c.markers == nil {
		return nil
	}
	out := map[string][]*marker{}
	for _, pod := range pods {
		if _, done := out[pod.Namespace]; done || !probed(pod) {
			continue
		}
		ppms, err := c.markers.PodProbeMarkers(pod.Namespace).List(labels.Everything())
		if err != nil {
			continue
		}
		ms := []*marker{}
		for _, ppm := range ppms {
			if ppm.DeletionTimestamp != nil {
				continue
			}
			m, err := markerOf(ppm, c.webhooksOff)
			if err != nil {
				klog.FromContext(ctx).V(4).Info("PodProbeMarker selects nothing", "podProbeMarker", klog.KObj(ppm), "err", err)
				continue
			}
			ms = append(ms, m)
		}
		slices.SortFunc(ms, func(a, b *marker) int { return strings.Compare(a.name, b.name) })
		out[pod.Namespace] = ms
	}
	return out
}

// deleteNPP deletes the NodePodProbe of a node that is gone (confirmed by the API server: a node
// created a moment ago may not be cached yet) or virtual.
func (c *Controller) deleteNPP(ctx context.Context, node *corev1.Node, npp *appsv1alpha1.NodePodProbe) error {
	if npp.DeletionTimestamp != nil {
		return nil
	}
	if node == nil {
		_, err := c.client.CoreV1().Nodes().Get(ctx, npp.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(4).Info("Node exists but is not cached yet; waiting for its event")
			return nil
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("checking node %s: %w", npp.Name, err)
		}
	}
	uid := npp.UID
	err := c.kruiseClient.AppsV1alpha1().NodePodProbes().Delete(ctx, npp.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodePodProbe %s: %w", npp.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted NodePodProbe", "virtual", node != nil)
	return nil
}

// setProblems records what node's spec left out for each marker and queues the markers whose
// record changed, to report it.
func (c *Controller) setProblems(node string, problems map[string]map[string][]string) {
	c.mu.Lock()
	var changed []string
	for key, byNode := range c.problems {
		if _, still := problems[key]; !still {
			if _, had := byNode[node]; had {
				delete(byNode, node)
				changed = append(changed, key)
				if len(byNode) == 0 {
					delete(c.problems, key)
				}
			}
		}
	}
	for key, reasons := range problems {
		byNode := c.problems[key]
		if byNode == nil {
			byNode = map[string]map[string][]string{}
			c.problems[key] = byNode
		}
		if !apiequality.Semantic.DeepEqual(byNode[node], reasons) {
			byNode[node] = reasons
			changed = append(changed, key)
		}
	}
	c.mu.Unlock()
	for _, key := range changed {
		c.queue.Add(key)
	}
}

// summaries are, per reason, one line summing up what the nodes' specs leave out of marker key.
func (c *Controller) summaries(key string) map[string]string {
	c.mu.Lock()
	byReason := map[string][]string{}
	for _, reasons := range c.problems[key] {
		for reason, lines := range reasons {
			byReason[reason] = append(byReason[reason], lines...)
		}
	}
	c.mu.Unlock()
	out := map[string]string{}
	for reason, lines := range byReason {
		slices.Sort(lines)
		lines = slices.Compact(lines)
		const shown = 3
		s := strings.Join(lines[:min(shown, len(lines))], "; ")
		if len(lines) > shown {
			s += fmt.Sprintf("; and %d more", len(lines)-shown)
		}
		out[reason] = s
	}
	return out
}

// report records a Warning Event on ppm for each reason whose summary changed since the last one
// recorded: one per change, not one per pod and sync.
func (c *Controller) report(ppm *appsv1alpha1.PodProbeMarker, key string) {
	now := c.summaries(key)
	c.mu.Lock()
	last := c.reported[key]
	var due []string
	for reason, s := range now {
		if last[reason] != s {
			due = append(due, reason)
		}
	}
	c.reported[key] = now
	c.mu.Unlock()
	slices.Sort(due)
	for _, reason := range due {
		c.recorder.Eventf(ppm, corev1.EventTypeWarning, reason, "Probes left out of the NodePodProbes: %s", now[reason])
	}
}

// forgetMarker drops what is remembered of a deleted marker.
func (c *Controller) forgetMarker(key string) {
	c.mu.Lock()
	delete(c.reported, key)
	c.mu.Unlock()
}

// waitForCleanup is how long a marker being deleted waits before it is looked at again should
// no event bring it back (a missed one).
const waitForCleanup = 30 * time.Second

// syncMarker keeps a marker's finalizer and status, and reports what the nodes left out of it.
func (c *Controller) syncMarker(ctx context.Context, key string) (time.Duration, error) {
	if c.markers == nil {
		return 0, nil
	}
	ns, name, _ := strings.Cut(key, "/")
	ppm, err := c.markers.PodProbeMarkers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetMarker(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "podProbeMarker", klog.KObj(ppm)))
	if ppm.DeletionTimestamp != nil {
		return c.finalize(ctx, ppm)
	}
	if !slices.Contains(ppm.Finalizers, appsv1alpha1.PodProbeMarkerFinalizer) {
		withFinalizer := ppm.DeepCopy()
		withFinalizer.Finalizers = append(withFinalizer.Finalizers, appsv1alpha1.PodProbeMarkerFinalizer)
		if ppm, err = c.kruiseClient.AppsV1alpha1().PodProbeMarkers(ns).Update(ctx, withFinalizer, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("adding finalizer %s: %w", appsv1alpha1.PodProbeMarkerFinalizer, err)
		}
	}
	c.report(ppm, key)
	status := appsv1alpha1.PodProbeMarkerStatus{ObservedGeneration: ppm.Generation}
	if m, err := markerOf(ppm, c.webhooksOff); err == nil {
		pods, err := c.pods.Pods(ns).List(m.selector)
		if err != nil {
			return 0, err
		}
		for _, p := range pods {
			if counted(p) {
				status.MatchedPods++
			}
		}
	}
	if ppm.Status == status {
		return 0, nil
	}
	updated := ppm.DeepCopy()
	updated.Status = status
	if _, err := c.kruiseClient.AppsV1alpha1().PodProbeMarkers(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("updating the status: %w", err)
	}
	return 0, nil
}

// finalize removes the finalizer of a marker being deleted once no NodePodProbe lists a probe
// of it and no active pod of its namespace records marks of it.
func (c *Controller) finalize(ctx context.Context, ppm *appsv1alpha1.PodProbeMarker) (time.Duration, error) {
	key := ppm.Namespace + "/" + ppm.Name
	if !slices.Contains(ppm.Finalizers, appsv1alpha1.PodProbeMarkerFinalizer) {
		c.forgetMarker(key)
		return 0, nil
	}
	npps, err := c.npps.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	for _, npp := range npps {
		if markersListed(npp.Spec)[key] {
			klog.FromContext(ctx).V(2).Info("Waiting for the probes to leave the NodePodProbes", "nodePodProbe", npp.Name)
			return waitForCleanup, nil
		}
	}
	pods, err := c.pods.Pods(ppm.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	for _, p := range pods {
		if active(p) && markersMarking(p)[ppm.Name] {
			klog.FromContext(ctx).V(2).Info("Waiting for the marks to leave the pods", "pod", klog.KObj(p))
			return waitForCleanup, nil
		}
	}
	updated := ppm.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == appsv1alpha1.PodProbeMarkerFinalizer })
	if _, err := c.kruiseClient.AppsV1alpha1().PodProbeMarkers(ppm.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("removing finalizer %s: %w", appsv1alpha1.PodProbeMarkerFinalizer, err)
	}
	c.forgetMarker(key)
	klog.FromContext(ctx).V(2).Info("Removed the finalizer: no probe and no mark of it is left")
	return 0, nil
}
