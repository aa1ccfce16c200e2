package uniteddeployment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Event reasons.
const (
	reasonFailedRevision  = "FailedRevisionProvision"
	reasonInvalidReplicas = "FailedSpecifySubsetReplicas"
	reasonFailedCreate    = "FailedCreateSubset"
	reasonCreatedSubset   = "SuccessfulCreateSubset"
	reasonFailedDelete    = "FailedDeleteSubset"
	reasonDeleted         = "SuccessfulDeleteSubset"
	reasonFailedUpdate    = "FailedUpdateSubset"
	reasonFailedPatchPod  = "FailedPatchReservedPod"
)

// reservedSuffix narrows the scale selector to the pods that count under reservation.
var reservedSuffix = "," + appsv1alpha1.UnitedDeploymentReservedPodLabel + "=false"

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	cached, err := c.uds.UnitedDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if cached.DeletionTimestamp != nil {
		return 0, nil // the garbage collector removes the subset workloads
	}
	ud := cached.DeepCopy()
	logger := klog.FromContext(ctx).WithValues("unitedDeployment", klog.KObj(ud))
	ctx = klog.NewContext(ctx, logger)
	now := c.clock.Now()
	t := &timer{}

	selector, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedRevision, "invalid selector: %v", err)
		return 0, nil // only a new spec helps
	}
	k, ok := templateKind(ud)
	if !ok {
		return 0, nil // the webhook refuses this; nothing to run
	}
	st := ud.Status.DeepCopy()
	syncSubsetStatuses(ud, st, now)

	revs, err := c.revisions(ctx, ud, selector)
	if revs != nil && revs.Update == nil {
		st.CollisionCount = &revs.CollisionCount
		_ = c.writeStatus(ctx, ud, st)
	}
	if err != nil {
		c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedRevision, "%v", err)
		return 0, err
	}
	st.CollisionCount = &revs.CollisionCount
	current, update := revs.Current.Name, revs.Update.Name
	setUpdatedCondition(st, current, update, now)

	all, err := c.owned(ud)
	if err != nil {
		return 0, err
	}
	cls := classify(ud, k, all)
	var errs []error
	// Stale workloads go first, so a renamed or recreated subset's pods are on their way out
	// before the new workload's are made.
	for _, e := range cls.stale {
		errs = append(errs, c.deleteWorkload(ctx, ud, e))
	}
	for name, e := range cls.kept {
		if e.pods, err = c.podsOf(e); err != nil {
			return 0, err
		}
		cls.kept[name] = e
	}

	obs, reserved, err := c.judge(ctx, ud, st, cls.kept, update, now, t)
	errs = append(errs, err)
	next, err := allocate(ud, obs)
	if err != nil {
		c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonInvalidReplicas, "Specified subset replicas is ineffective: %v", err)
		setCondition(st, appsv1alpha1.SubsetProvisioned, corev1.ConditionFalse, "InvalidReplicas", err.Error(), now)
		return 0, errors.Join(append(errs, c.writeStatus(ctx, ud, st))...)
	}
	if ud.Spec.Topology.ScheduleStrategy.ShouldReserveUnschedulablePods() {
		for name, o := range obs {
			if ss := st.GetSubsetStatus(name); ss != nil && !o.unschedulable && o.marked && next[name] > o.replicas {
				ss.SetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable, corev1.ConditionFalse, reasonReschedule,
					"subset just recovered scaled up", metav1.NewTime(now))
			}
		}
	}
	parts := partitions(ud, next)
	creates, updates := plan(ud, cls.kept, next, parts, update, unavailable(ud, cls.kept, obs))

	provisionErr := c.create(ctx, ud, creates)
	if provisionErr != nil {
		setCondition(st, appsv1alpha1.SubsetProvisioned, corev1.ConditionFalse, "Error", provisionErr.Error(), now)
	} else {
		setCondition(st, appsv1alpha1.SubsetProvisioned, corev1.ConditionTrue, "", "", now)
	}
	updateErr := c.update(ctx, ud, updates)
	if updateErr != nil {
		setCondition(st, appsv1alpha1.SubsetUpdated, corev1.ConditionFalse, "Error", updateErr.Error(), now)
	} else {
		setCondition(st, appsv1alpha1.SubsetUpdated, corev1.ConditionTrue, "", "", now)
	}
	if ud.Spec.Topology.ScheduleStrategy.IsAdaptive() && (len(creates) > 0 || grows(updates)) {
		// New pods: look again when they may have been stuck long enough.
		t.at(ud.Spec.Topology.ScheduleStrategy.GetRescheduleCriticalDuration())
	}

	totals(st, cls.kept, reserved, next, parts, current, update, now)
	st.LabelSelector = selector.String()
	if ud.Spec.Topology.ScheduleStrategy.ShouldReserveUnschedulablePods() {
		st.LabelSelector += reservedSuffix
	}
	errs = append(errs, c.writeStatus(ctx, ud, st))
	if err := c.history.TruncateHistory(ctx, revs, ud.Spec.RevisionHistoryLimit, nil); err != nil {
		errs = append(errs, err)
	}
	// A create refused for a bad patch waits for a new spec; others are retried with backoff.
	if provisionErr != nil && !errors.Is(provisionErr, errRender) {
		errs = append(errs, provisionErr)
	}
	if updateErr != nil && !errors.Is(updateErr, errRender) {
		errs = append(errs, updateErr)
	}
	return t.after, errors.Join(errs...)
}

func grows(updates []change) bool {
	for _, u := range updates {
		if u.want.replicas > u.cur.replicas {
			return true
		}
	}
	return false
}

// revisions resolves ud's ControllerRevisions: the recorded part is spec.template, as the
// reference records it ({"spec":{"template":{...,"$patch":"replace"}}}).
func (c *Controller) revisions(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, selector labels.Selector) (*revision.Revisions, error) {
	data, err := revision.PatchData(ud.Spec.Template, "spec", "template")
	if err != nil {
		return nil, err
	}
	owner := revision.Owner{Object: ud, Kind: udKind, Selector: selector}
	var count int32
	if ud.Status.CollisionCount != nil {
		count = *ud.Status.CollisionCount
	}
	// The revisions carry the selector's labels as well as the template's, so that the selector
	// finds them even when the template's metadata names no labels (OpenKruise's CloneSet case).
	revLabels := maps.Clone(templateMeta(ud).Labels)
	if revLabels == nil {
		revLabels = map[string]string{}
	}
	if ud.Spec.Selector != nil {
		maps.Copy(revLabels, ud.Spec.Selector.MatchLabels)
	}
	content := revision.Content{Data: data, Labels: revLabels}
	return c.history.Resolve(ctx, owner, content, ud.Status.CurrentRevision, count)
}

// owned lists the workloads of the four kinds that ud controls.
func (c *Controller) owned(ud *appsv1alpha1.UnitedDeployment) ([]existing, error) {
	var out []existing
	for _, idx := range c.indexes {
		objs, err := idx.ByIndex(ownerIndex, ud.Namespace+"/"+ud.Name)
		if err != nil {
			return nil, fmt.Errorf("listing the subset workloads: %w", err)
		}
		for _, o := range objs {
			w, ok := o.(workload)
			if !ok {
				continue
			}
			if ref := udOwner(w); ref == nil || ref.UID != ud.UID {
				continue // a namesake's, left for the garbage collector
			}
			if e, ok := describe(w); ok {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// podsOf lists a subset workload's pods by its selector.
func (c *Controller) podsOf(e existing) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(e.selector)
	if err != nil || sel.Empty() {
		return nil, nil
	}
	pods, err := c.pods.Pods(e.obj.GetNamespace()).List(sel)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", klog.KObj(e.obj), err)
	}
	return pods, nil
}

// judge runs Adaptive scheduling over the kept subsets: what allocation reads of each, and the
// reserved pods of each. Under reservation it writes the pods' reserved labels.
func (c *Controller) judge(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, st *appsv1alpha1.UnitedDeploymentStatus,
	kept map[string]existing, update string, now time.Time, t *timer) (map[string]observed, map[string]int32, error) {
	strategy := &ud.Spec.Topology.ScheduleStrategy
	obs := make(map[string]observed, len(kept))
	reserved := map[string]int32{}
	var errs []error
	for name, e := range kept {
		o := observed{replicas: e.replicas, ready: e.ready}
		ss := st.GetSubsetStatus(name)
		switch {
		case ss == nil || !strategy.IsAdaptive():
		case strategy.ShouldReserveUnschedulablePods():
			var changes []reservation
			o.marked, o.unschedulable, o.reserved, o.timeouts, changes = judgeReserving(ss, e.pods, update,
				getCondition(st, appsv1alpha1.UnitedDeploymentUpdated), strategy, now, t)
			reserved[name] = o.reserved
			for _, ch := range changes {
				errs = append(errs, c.labelReserved(ctx, ud, ch))
			}
		default:
			o.unschedulable = judgeAdaptive(ss, e.pods, e.statusReplicas, e.ready, strategy, now, t)
		}
		obs[name] = o
	}
	return obs, reserved, errors.Join(errs...)
}

func (c *Controller) labelReserved(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, ch reservation) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"%t"}}}`, appsv1alpha1.UnitedDeploymentReservedPodLabel, ch.reserved)
	_, err := c.client.CoreV1().Pods(ch.pod.Namespace).Patch(ctx, ch.pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedPatchPod, "labelling pod %s reserved=%t: %v", ch.pod.Name, ch.reserved, err)
		return fmt.Errorf("labelling pod %s reserved=%t: %w", klog.KObj(ch.pod), ch.reserved, err)
	}
	return nil
}

// errRender marks a subset workload that cannot be made from the spec (a patch that does not
// apply): retrying does not help, a new spec does.
var errRender = errors.New("the subset workload cannot be rendered")

func (c *Controller) create(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, creates []desired) error {
	var errs []error
	for _, want := range creates {
		obj, err := render(ud, want)
		if err != nil {
			c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedCreate, "subset %s: %v", want.subset, err)
			errs = append(errs, fmt.Errorf("%w: %w", errRender, err))
			continue
		}
		created, err := c.write(ctx, obj, false)
		if err != nil {
			c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedCreate, "subset %s: %v", want.subset, err)
			errs = append(errs, fmt.Errorf("creating the workload of subset %s: %w", want.subset, err))
			continue
		}
		c.recorder.Eventf(ud, corev1.EventTypeNormal, reasonCreatedSubset, "Created %T %s for subset %s", created, created.GetName(), want.subset)
		klog.FromContext(ctx).V(2).Info("Created subset workload", "subset", want.subset, "workload", klog.KObj(created), "replicas", want.replicas)
	}
	return errors.Join(errs...)
}

func (c *Controller) update(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, updates []change) error {
	var errs []error
	for _, u := range updates {
		obj, err := render(ud, u.want)
		if err != nil {
			c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedUpdate, "subset %s: %v", u.want.subset, err)
			errs = append(errs, fmt.Errorf("%w: %w", errRender, err))
			continue
		}
		if _, err := c.write(ctx, applyTo(u.cur.obj, obj), true); err != nil {
			c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedUpdate, "subset %s: %v", u.want.subset, err)
			errs = append(errs, fmt.Errorf("updating %s of subset %s: %w", klog.KObj(u.cur.obj), u.want.subset, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Updated subset workload", "subset", u.want.subset, "workload", klog.KObj(u.cur.obj),
			"revision", u.want.revision, "replicas", u.want.replicas, "partition", u.want.partition)
	}
	return errors.Join(errs...)
}

// write creates or updates a subset workload through its kind's client.
func (c *Controller) write(ctx context.Context, obj workload, update bool) (workload, error) {
	ns := obj.GetNamespace()
	opts := metav1.CreateOptions{}
	uopts := metav1.UpdateOptions{}
	switch o := obj.(type) {
	case *appsv1beta1.CloneSet:
		if update {
			return c.kruiseClient.AppsV1beta1().CloneSets(ns).Update(ctx, o, uopts)
		}
		return c.kruiseClient.AppsV1beta1().CloneSets(ns).Create(ctx, o, opts)
	case *appsv1beta1.StatefulSet:
		if update {
			return c.kruiseClient.AppsV1beta1().StatefulSets(ns).Update(ctx, o, uopts)
		}
		return c.kruiseClient.AppsV1beta1().StatefulSets(ns).Create(ctx, o, opts)
	case *appsv1.StatefulSet:
		if update {
			return c.client.AppsV1().StatefulSets(ns).Update(ctx, o, uopts)
		}
		return c.client.AppsV1().StatefulSets(ns).Create(ctx, o, opts)
	case *appsv1.Deployment:
		if update {
			return c.client.AppsV1().Deployments(ns).Update(ctx, o, uopts)
		}
		return c.client.AppsV1().Deployments(ns).Create(ctx, o, opts)
	}
	return nil, fmt.Errorf("unknown workload type %T", obj)
}

// deleteWorkload deletes a stale subset workload (its pods follow by garbage collection),
// preconditioned on its UID so that a namesake is never deleted.
func (c *Controller) deleteWorkload(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, e existing) error {
	if e.obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := e.obj.GetUID()
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	ns, name := e.obj.GetNamespace(), e.obj.GetName()
	var err error
	switch e.obj.(type) {
	case *appsv1beta1.CloneSet:
		err = c.kruiseClient.AppsV1beta1().CloneSets(ns).Delete(ctx, name, opts)
	case *appsv1beta1.StatefulSet:
		err = c.kruiseClient.AppsV1beta1().StatefulSets(ns).Delete(ctx, name, opts)
	case *appsv1.StatefulSet:
		err = c.client.AppsV1().StatefulSets(ns).Delete(ctx, name, opts)
	case *appsv1.Deployment:
		err = c.client.AppsV1().Deployments(ns).Delete(ctx, name, opts)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedDelete, "deleting %s of subset %q: %v", name, e.subset, err)
		return fmt.Errorf("deleting %s: %w", klog.KObj(e.obj), err)
	}
	c.recorder.Eventf(ud, corev1.EventTypeNormal, reasonDeleted, "Deleted %s of subset %q (%s)", name, e.subset, staleWhy(ud, e))
	klog.FromContext(ctx).V(2).Info("Deleted stale subset workload", "workload", klog.KObj(e.obj), "subset", e.subset)
	return nil
}

// staleWhy says, for the Event, why a workload was deleted.
func staleWhy(ud *appsv1alpha1.UnitedDeployment, e existing) string {
	k, _ := templateKind(ud)
	switch {
	case e.kind != k:
		return "the template's kind changed"
	case e.subset == "" || subsetOf(ud, e.subset) == nil:
		return "the subset left the topology"
	case !selectorFits(ud, e):
		return "the selector changed"
	}
	return "a duplicate"
}

// writeStatus writes st when it differs from ud's status or the generation is new.
func (c *Controller) writeStatus(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, st *appsv1alpha1.UnitedDeploymentStatus) error {
	if ud.Status.ObservedGeneration == ud.Generation && equality.Semantic.DeepEqual(&ud.Status, st) {
		return nil
	}
	st.ObservedGeneration = ud.Generation
	next := ud.DeepCopy()
	next.Status = *st
	if _, err := c.kruiseClient.AppsV1alpha1().UnitedDeployments(ud.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	return nil
}
