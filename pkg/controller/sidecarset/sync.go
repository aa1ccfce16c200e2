package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// EventReasonNotUpgradable is the reason of the Warning Event a SidecarSet gets when pods it
// selects differ from it in more than images.
const EventReasonNotUpgradable = "NotUpgradable"

// maxNamedPods bounds the pod names an Event or log line lists.
const maxNamedPods = 5

// sync is one pass over the SidecarSet named key: history, upgrades, status.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ss, err := c.sidecarSets.Get(key)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading SidecarSet %s from the cache: %w", key, err)
	}
	if ss.DeletionTimestamp != nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	pods, err := c.selectedPods(ss)
	if err != nil {
		return 0, err
	}
	revs, err := c.syncRevisions(ctx, ss, pods)
	if err != nil {
		if revs != nil && revs.CollisionCount != 0 {
			// Keep the grown collision count, so that the next attempt tries the next name.
			_ = c.writeStatus(ctx, ss, newStatus(ss, counts{}, "", revs.CollisionCount))
		}
		return 0, err
	}
	h, err := hashesOf(ss)
	if err != nil {
		return 0, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
	}
	if ss, err = c.writeHashes(ctx, ss); err != nil {
		return 0, err
	}
	h.resize = c.resizerFor(ctx, ss, revs)
	var views []podView
	var requeue time.Duration
	pending := false
	for _, pod := range pods {
		if !activePod(pod) {
			continue
		}
		v, ok := viewPod(ss, h, pod)
		if !ok {
			continue
		}
		views = append(views, v)
		if ok, recheck := c.podVersions.Satisfied(ctx, pod); !ok {
			pending = true
			requeue = durations.Shortest(requeue, recheck)
		}
	}

	var upgradeErr error
	var waits budgetwait.Waits
	if pending {
		logger.V(4).Info("Waiting for the pod cache to show the last upgrades")
	} else if flips := flipsDue(ss, views); len(flips) > 0 {
		// As OpenKruise: a pass that ends hand-overs upgrades no other pod; the next one,
		// after these writes are seen, does.
		flipped, err := c.flipAll(ctx, ss, flips, &waits)
		upgradeErr = err
		for i := range views {
			if flipped[views[i].pod.UID] {
				views[i].ready = false
			}
		}
	} else {
		ch, err := choose(ss, views, c.clock.Now())
		if err != nil {
			c.recorder.Eventf(ss, corev1.EventTypeWarning, "InvalidSpec", "%v", err)
			return 0, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
		}
		requeue = durations.Shortest(requeue, ch.recheck)
		ch.hotBlocked = hotBlockedPods(ss, views)
		c.report(ctx, ss, ch)
		resizes := map[types.UID]*inplace.Spec{}
		for _, v := range views {
			if v.resize != nil {
				resizes[v.pod.UID] = v.resize
			}
		}
		upgraded, err := c.upgradeAll(ctx, ss, h, revs.Update.Name, ch.upgrade, resizes, &waits)
		upgradeErr = errors.Join(err, c.recordUpgradable(ctx, ss, views, upgradableVerdicts(ss, views, ch, upgraded)))
		for i := range views {
			if upgraded[views[i].pod.UID] {
				views[i].updated, views[i].ready = true, false
			}
		}
	}
	if !pending {
		// The pass wrote every upgrade it could: no wait means none is left.
		c.budgetWaits.Report(ctx, c.recorder, ss, ss.Name, waits.List())
	}
	if waits.Len() > 0 {
		requeue = durations.Shortest(requeue, budgetwait.RetryAfter)
	}
	st := newStatus(ss, tally(views), revs.Update.Name, revs.CollisionCount)
	if err := c.writeStatus(ctx, ss, st); err != nil {
		return 0, errors.Join(upgradeErr, err)
	}
	return requeue, upgradeErr
}

// selectedPods are the cached pods ss selects, in every namespace its namespaceSelector
// matches, active or not.
func (c *Controller) selectedPods(ss *appsv1beta1.SidecarSet) ([]*corev1.Pod, error) {
	if ss.Spec.Selector == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("SidecarSet %s: spec.selector: %w", ss.Name, err)
	}
	if selector.Empty() {
		return nil, nil
	}
	all, err := c.pods.List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of SidecarSet %s: %w", ss.Name, err)
	}
	var out []*corev1.Pod
	for _, pod := range all {
		ok, err := sidecarrules.SelectsNamespace(ss, c.namespaceLabels(pod.Namespace))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, pod)
		}
	}
	return out, nil
}

// upgradeAll upgrades pods in place to ss, resizing the sidecars resizes names by pod UID
// first; it returns the UIDs of the pods written and the errors of the others. A pod whose
// upgrade restarts a container or resizes one asks the budget first, and one it holds back (or
// the pod webhook refuses for one) goes to waits.
func (c *Controller) upgradeAll(ctx context.Context, ss *appsv1beta1.SidecarSet, h hashes, rev string, pods []*corev1.Pod,
	resizes map[types.UID]*inplace.Spec, waits *budgetwait.Waits) (map[types.UID]bool, error) {
	done := map[types.UID]bool{}
	var errs []error
	for _, pod := range pods {
		logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "revision", rev)
		resize := resizes[pod.UID]
		data, containers, err := planUpgrade(ss, h, rev, pod, resize, c.clock.Now())
		if err == nil {
			if c.budgetHolds(ctx, pod, upgradeOperation(pod, containers, resize), waits) {
				continue
			}
			target := pod
			if resize != nil && len(resize.ContainerResources) > 0 {
				// The resize first, as the engine's updater does: the state recorded by the
				// patch then never claims a resize that was not asked for.
				if target, err = c.resizePod(ctx, pod, resize.ContainerResources); err == nil {
					data, containers, err = planUpgrade(ss, h, rev, target, resize, c.clock.Now())
					containers = append(containers, sortedKeys(resize.ContainerResources)...)
				}
			}
			if err == nil {
				if err = c.patchPod(ctx, target, data); budgetRefused(pod, err, waits) {
					continue
				}
			}
		}
		if err != nil {
			c.metrics.upgrades.WithLabelValues("error").Inc()
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				c.recorder.Eventf(ss, corev1.EventTypeWarning, inplace.EventReasonFailed,
					"failed to upgrade the sidecars of pod %s/%s in place: %v", pod.Namespace, pod.Name, err)
			}
			errs = append(errs, fmt.Errorf("upgrading pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		c.metrics.upgrades.WithLabelValues("ok").Inc()
		done[pod.UID] = true
		logger.Info("Upgraded sidecars in place", "containers", containers)
		c.recorder.Eventf(ss, corev1.EventTypeNormal, inplace.EventReasonSucceeded,
			"upgrading the sidecars of pod %s/%s in place: %s", pod.Namespace, pod.Name, strings.Join(containers, ", "))
	}
	return done, errors.Join(errs...)
}

// report makes the pods that cannot be upgraded in place visible: a metric always, and a
// Warning Event and a log line when the finding changed since last reported. Pods held back
// by their workload's update are logged.
func (c *Controller) report(ctx context.Context, ss *appsv1beta1.SidecarSet, ch choice) {
	logger := klog.FromContext(ctx)
	c.metrics.notUpgradable.WithLabelValues(ss.Name).Set(float64(len(ch.notUpgradable)))
	for name, why := range ch.waiting {
		logger.V(2).Info("Pod waits before its sidecars are upgraded", "pod", name, "reason", why)
	}
	names := make([]string, 0, len(ch.notUpgradable))
	for _, pod := range ch.notUpgradable {
		names = append(names, pod.Namespace+"/"+pod.Name)
	}
	slices.Sort(names)
	blocked := sortedKeys(ch.hotBlocked)
	finding := strings.Join(names, ",") + "|" + strings.Join(blocked, ",")
	c.reportedMu.Lock()
	changed := c.reported[ss.Name] != finding
	c.reported[ss.Name] = finding
	c.reportedMu.Unlock()
	if !changed {
		return
	}
	if len(blocked) > 0 {
		shown := blocked[:min(len(blocked), maxNamedPods)]
		var whys []string
		for _, name := range shown {
			whys = append(whys, name+" ("+ch.hotBlocked[name]+")")
		}
		logger.Info("Hot upgrades wait on a new sidecar copy that does not come up", "count", len(blocked), "pods", whys)
		c.recorder.Eventf(ss, corev1.EventTypeWarning, EventReasonHotUpgradeBlocked,
			"%d pod(s) hand over to a new sidecar copy that does not come up; their old copy keeps working until the SidecarSet names an image that runs: %s",
			len(blocked), strings.Join(whys, ", "))
	}
	if len(names) == 0 {
		return
	}
	shown := names[:min(len(names), maxNamedPods)]
	logger.Info("Pods differ from the SidecarSet in more than images and sidecar cpu and memory, and cannot be upgraded in place",
		"count", len(names), "pods", shown)
	c.recorder.Eventf(ss, corev1.EventTypeWarning, EventReasonNotUpgradable,
		"%d pod(s) differ from the SidecarSet in more than images (and the cpu and memory of sidecars) and are not upgraded in place (recreate them to update): %s",
		len(names), strings.Join(shown, ", "))
}

// forget drops what the controller keeps about a SidecarSet that is gone.
func (c *Controller) forget(name string) {
	c.metrics.notUpgradable.DeleteLabelValues(name)
	c.reportedMu.Lock()
	delete(c.reported, name)
	c.reportedMu.Unlock()
	c.budgetWaits.Forget(name)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// patchPod applies the strategic merge patch data to pod, and holds the pod's next upgrade back
// until the cache shows this write.
func (c *Controller) patchPod(ctx context.Context, pod *corev1.Pod, data []byte) error {
	written, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	if err == nil {
		c.podVersions.Expect(written)
	}
	return err
}

// resizePod gives the named containers of pod their new resources through the resize
// subresource, and returns the pod as resized (the upgrade's patch rests on its version).
func (c *Controller) resizePod(ctx context.Context, pod *corev1.Pod, resize map[string]corev1.ResourceRequirements) (*corev1.Pod, error) {
	data, err := inplace.ResizePatch(pod, resize)
	if err != nil {
		return nil, err
	}
	resized, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "resize")
	if err != nil {
		return nil, fmt.Errorf("resizing containers %v: %w", sortedKeys(resize), err)
	}
	return resized, nil
}

// upgradeOperation is what an upgrade restarting containers and applying resize is to a
// PodUnavailableBudget: UPDATE when a container restarts (for a new image, or a resize its
// resizePolicy restarts for), RESIZE when cpu and memory change in running containers only,
// "" when neither (annotations only).
func upgradeOperation(pod *corev1.Pod, restarts []string, resize *inplace.Spec) policyv1alpha1.PubOperation {
	if len(restarts) > 0 {
		return policyv1alpha1.PubUpdateOperation
	}
	if resize != nil {
		return resize.Operation(pod, 0)
	}
	return ""
}

// budgetHolds asks the PodUnavailableBudget before a write that is op to it ("" asks nothing)
// and reports whether the pod waits, recorded in waits.
func (c *Controller) budgetHolds(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, waits *budgetwait.Waits) bool {
	if op == "" {
		return false
	}
	if w := c.budget.Admit(ctx, pod, op); w != nil {
		waits.Add(*w)
		return true
	}
	return false
}

// budgetRefused reports whether err is the pod webhook's refusal of a write to pod for a budget,
// recorded in waits: a wait, not a failure.
func budgetRefused(pod *corev1.Pod, err error, waits *budgetwait.Waits) bool {
	reason, ok := budgetwait.Refused(err)
	if ok {
		waits.Add(budgetwait.Wait{Namespace: pod.Namespace, Pod: pod.Name, Op: policyv1alpha1.PubUpdateOperation, Reason: reason})
	}
	return ok
}
