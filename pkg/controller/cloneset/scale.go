package cloneset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// scale creates or deletes pods as d says; it reports whether it wrote anything, in which case
// the pass stops there and the next waits for the cache to show the writes.
func (c *Controller) scale(ctx context.Context, p *pass, d Diff, facts []PodFacts) (bool, error) {
	owned, err := ownership.Owned[*corev1.Pod](c.podIndex, controllerKind, p.cs)
	if err != nil {
		return false, err
	}
	held := sets.New[string]()
	for _, pod := range owned {
		held.Insert(pod.Labels[appsv1beta1.CloneSetInstanceID])
	}
	stranded := c.stranded.settle(p.key, held, d.ScaleUp)
	if !p.cs.Spec.ScaleStrategy.EnablePVCReuse {
		if acted, err := c.cleanupClaims(ctx, p, stranded); acted || err != nil {
			return acted, err
		}
	}
	if acted, err := c.managePreparingDelete(ctx, p, d); acted || err != nil {
		return acted, err
	}
	if d.ScaleUp > 0 {
		if d.ScaleUpLimit < d.ScaleUp {
			c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonScaleUpLimited,
				"scaleStrategy.maxUnavailable allows %d of the %d pods to create now", d.ScaleUpLimit, d.ScaleUp)
		}
		if d.ScaleUpLimit > 0 {
			n := min(d.ScaleUpLimit, workers.Burst)
			if n < d.ScaleUpLimit {
				// The pod events of these creations bring the next pass (expectations).
				klog.FromContext(ctx).V(2).Info("Creating a burst of pods; the rest follow once the cache shows these",
					"creating", n, "wanted", d.ScaleUpLimit, "burst", workers.Burst)
			}
			return true, c.createPods(ctx, p, owned, stranded, n, d.ScaleUpOld)
		}
	}
	cands := make([]Candidate, len(p.pods))
	for i := range p.pods {
		cands[i] = Candidate{Pod: p.pods[i], Facts: facts[i]}
	}
	order := podorder.DeletionOrder{Now: p.now, SpreadConstraints: p.cs.Spec.Template.Spec.TopologySpreadConstraints,
		Available: func(pod *corev1.Pod) bool { return podstate.Available(pod, p.cs.Spec.MinReadySeconds, p.now) }}
	doomed := ChooseDeletes(d, cands, order.Sort)
	if len(doomed) == 0 {
		return false, nil
	}
	if len(doomed) > workers.Burst {
		klog.FromContext(ctx).V(2).Info("Deleting a burst of pods; the rest follow once the cache shows these",
			"deleting", workers.Burst, "chosen", len(doomed), "burst", workers.Burst)
		doomed = doomed[:workers.Burst] // ChooseDeletes' order: the first are the ones to go first
	}
	p.budgetSettled = true
	return true, c.deletePods(ctx, p, doomed)
}

// managePreparingDelete deletes the pods whose preDelete hook has let them go and, when the
// CloneSet wants more pods again, takes back those still waiting (unless asked to go by name).
func (c *Controller) managePreparingDelete(ctx context.Context, p *pass, d Diff) (bool, error) {
	acted := false
	var errs []string
	writes := 0
	for _, pod := range p.pods {
		if lifecycle.StateOf(pod) != "PreparingDelete" {
			continue
		}
		if writes == workers.Burst {
			break // the rest on the next pass, as for any burst of deletions
		}
		_, specified := pod.Labels[appsv1beta1.SpecifiedDeleteKey]
		want := lifecycle.WantDelete
		if d.ScaleUp > 0 && !specified && !slices.Contains(p.cs.Spec.ScaleStrategy.PodsToDelete, pod.Name) {
			want = lifecycle.WantKeep
		}
		dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.cs.Spec.Lifecycle, Want: want})
		var err error
		switch dec.Action {
		case lifecycle.ActionDelete:
			err = c.deleteOne(ctx, p, pod)
		case lifecycle.ActionSetState:
			err = c.setLifecycleState(ctx, p, pod, dec)
		default:
			continue
		}
		acted = true
		writes++
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return true, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return acted, nil
}

// createPods creates n pods (and their PVCs), the first old of them at the current revision,
// taking the stranded instance IDs first. Only these n are planned: n is at most a burst,
// whatever the replicas. owned are all the CloneSet's pods.
func (c *Controller) createPods(ctx context.Context, p *pass, owned []*corev1.Pod, stranded []string, n, old int) error {
	reuse := p.cs.Spec.ScaleStrategy.EnablePVCReuse
	waiting, recheck := ReplacementsWaiting(owned, p.claims, reuse, p.now)
	p.recheck = durations.Shortest(p.recheck, recheck)
	if waiting > 0 {
		klog.FromContext(ctx).V(2).Info("Replacements wait for the pods being deleted whose PVCs they take", "waiting", waiting, "recheck", recheck)
	}
	n -= min(waiting, n)
	old = min(old, n)
	ids := InstanceIDs(n, owned, p.claims, reuse, c.randomID, stranded...)
	var short error
	if len(ids) < n {
		short = fmt.Errorf("found a free instance ID for only %d of the %d pods to create: nearly all of the 27^5 names of the CloneSet's pods are taken", len(ids), n)
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedCreate, "%v", short)
	}
	existing := sets.New[string]()
	for _, cl := range p.claims {
		existing.Insert(cl.Name)
	}
	ref := metav1.NewControllerRef(p.cs, controllerKind)
	recipe := func(rev string) PodRecipe {
		t := p.history.Template(rev)
		if t == nil {
			t = &p.cs.Spec.Template
		}
		return PodRecipe{Owner: *ref, Namespace: p.cs.Namespace, CloneSet: p.cs.Name, Template: t,
			ClaimTemplates: p.cs.Spec.VolumeClaimTemplates, MatchLabels: p.cs.Spec.Selector.MatchLabels, Revision: rev,
			ShortHash: c.shortHash}
	}
	type plan struct {
		pod    *corev1.Pod
		claims []*corev1.PersistentVolumeClaim
	}
	plans := make([]plan, len(ids))
	for i, id := range ids {
		rev := p.history.UpdateName()
		if i < old {
			rev = p.history.CurrentName()
		}
		r := recipe(rev)
		plans[i] = plan{pod: NewPod(r, id, p.now)}
		for _, cl := range NewClaims(r, id) {
			if !existing.Has(cl.Name) {
				plans[i].claims = append(plans[i].claims, cl)
			}
		}
	}
	for _, pl := range plans {
		c.expect.Expect(p.key, expectations.Create, expectations.Pods, pl.pod.Name)
		for _, cl := range pl.claims {
			c.expect.Expect(p.key, expectations.Create, expectations.PersistentVolumeClaims, cl.Name)
		}
	}
	// Each call writes only its own index, and SlowStart waits for them all before returning.
	tried := make([]bool, len(plans))
	_, err := workers.SlowStart(len(plans), func(i int) error {
		tried[i] = true
		return c.createOne(ctx, p, plans[i].pod, plans[i].claims)
	})
	// Creations never tried are not awaited (a failed one was let go by createOne; one that
	// succeeded in the failing batch is still awaited).
	for i, pl := range plans {
		if tried[i] {
			continue
		}
		c.expect.Observe(p.key, expectations.Create, expectations.Pods, pl.pod.Name)
		for _, cl := range pl.claims {
			c.expect.Observe(p.key, expectations.Create, expectations.PersistentVolumeClaims, cl.Name)
		}
	}
	return errors.Join(err, short)
}

// createOne creates the pod's missing PVCs, then the pod. When it fails with PVCs of the pod's
// instance ID in place, the ID is remembered as stranded so that they are kept for the next try.
func (c *Controller) createOne(ctx context.Context, p *pass, pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim) error {
	strand := func() {
		if len(p.cs.Spec.VolumeClaimTemplates) > 0 {
			c.stranded.add(p.key, pod.Labels[appsv1beta1.CloneSetInstanceID])
		}
	}
	for _, cl := range claims {
		if _, err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			c.expect.Observe(p.key, expectations.Create, expectations.PersistentVolumeClaims, cl.Name)
			if !apierrors.IsAlreadyExists(err) {
				strand() // the PVCs created before this one stay
				c.expect.Observe(p.key, expectations.Create, expectations.Pods, pod.Name)
				c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedCreate, "failed to create PVC %s: %v", cl.Name, err)
				return fmt.Errorf("creating PVC %s: %w", cl.Name, err)
			}
		}
	}
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		strand()
		c.expect.Observe(p.key, expectations.Create, expectations.Pods, pod.Name)
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedCreate, "failed to create pod %s: %v", pod.Name, err)
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "succeed to create pod %s", pod.Name)
	klog.FromContext(ctx).V(2).Info("Created pod", "pod", klog.KObj(pod), "revision", podstate.Revision(pod))
	return nil
}

// deletePods deletes the chosen pods, or moves those with a preDelete hook to PreparingDelete.
func (c *Controller) deletePods(ctx context.Context, p *pass, doomed []*corev1.Pod) error {
	var errs []string
	for _, pod := range doomed {
		dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.cs.Spec.Lifecycle, Want: lifecycle.WantDelete})
		var err error
		switch dec.Action {
		case lifecycle.ActionDelete:
			err = c.deleteOne(ctx, p, pod)
		case lifecycle.ActionSetState:
			if err = c.setLifecycleState(ctx, p, pod, dec); err == nil {
				c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonPreparingDelete, "pod %s waits on its preDelete hook: %s", pod.Name, dec.Reason)
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// deleteOne deletes a pod and the PVCs of its instance ID: a pod the CloneSet deletes itself does
// not come back, so neither do its volumes (a pod deleted by someone else keeps them for the next
// pod with its ID, unless reuse is off).
func (c *Controller) deleteOne(ctx context.Context, p *pass, pod *corev1.Pod) error {
	err := c.expect.DeletePod(ctx, c.client.CoreV1(), p.key, pod)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if w := budgetwait.Deletion(pod, err); w != nil {
			// The pod webhook kept the pod for a budget: it waits (DeletePod has dropped the
			// expectation), reported once for the pass, not an error to back off from.
			p.waits.Add(*w)
			return nil
		}
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedDelete, "failed to delete pod %s: %v", pod.Name, err)
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "succeed to delete pod %s", pod.Name)
	id := pod.Labels[appsv1beta1.CloneSetInstanceID]
	for _, cl := range p.claims {
		if id == "" || cl.Labels[appsv1beta1.CloneSetInstanceID] != id || cl.DeletionTimestamp != nil {
			continue
		}
		c.expect.Expect(p.key, expectations.Delete, expectations.PersistentVolumeClaims, cl.Name)
		if err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Delete(ctx, cl.Name, metav1.DeleteOptions{}); err != nil {
			c.expect.Observe(p.key, expectations.Delete, expectations.PersistentVolumeClaims, cl.Name)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting PVC %s of pod %s: %w", cl.Name, pod.Name, err)
			}
		}
	}
	return nil
}

// cleanupClaims deletes, when PVCs are not reused, the PVCs no active pod holds: those of pods
// deleted, evicted or failed. The next pod then never takes the name, and the volume, of a pod
// still terminating on a node that is gone (OpenKruise #1099). The PVCs of stranded IDs are
// kept for the pods still to be created with them.
func (c *Controller) cleanupClaims(ctx context.Context, p *pass, stranded []string) (bool, error) {
	held := sets.New(stranded...)
	for _, pod := range p.pods {
		held.Insert(pod.Labels[appsv1beta1.CloneSetInstanceID])
	}
	acted := false
	for _, cl := range p.claims {
		id := cl.Labels[appsv1beta1.CloneSetInstanceID]
		if id == "" || held.Has(id) || cl.DeletionTimestamp != nil {
			continue
		}
		c.expect.Expect(p.key, expectations.Delete, expectations.PersistentVolumeClaims, cl.Name)
		err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Delete(ctx, cl.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cl.UID}})
		if err != nil {
			c.expect.Observe(p.key, expectations.Delete, expectations.PersistentVolumeClaims, cl.Name)
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return true, fmt.Errorf("deleting PVC %s, which no pod uses: %w", cl.Name, err)
			}
		}
		klog.FromContext(ctx).V(2).Info("Deleted a PVC no pod uses (PVC reuse is off)", "pvc", klog.KObj(cl))
		acted = true
	}
	return acted, nil
}
