package enhancedliveness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

const (
	// crrTTL is how long a finished request is kept (its result is readable meanwhile); the
	// pod's RestartsAnnotation is what the back-off reads, so the request need not outlive it.
	crrTTL = int32(600)
	// crrDeadlineSlack is added to the pod's termination grace to bound a request: one that
	// never finishes (its node's daemon gone) must not hold the workload's budget for ever.
	crrDeadlineSlack = int64(300)
)

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	objs, err := c.podIndexer.ByIndex(podIndex, key)
	if err != nil {
		return 0, fmt.Errorf("listing the pods of workload %s: %w", key, err)
	}
	var pods []*corev1.Pod
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && active(p) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		c.forget(key)
		return 0, nil
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	logger := klog.FromContext(ctx).WithValues("workload", key)
	ctx = klog.NewContext(ctx, logger)

	restarting, err := c.restarting(pods[0].Namespace)
	if err != nil {
		return 0, err
	}
	w := Workload{MaxUnavailable: c.maxUnavailable(ctx, pods)}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
		w.Pods = append(w.Pods, Pod{
			UID: p.UID, Name: p.Name, Ready: podReady(p), Restarting: restarting[p.UID],
			Containers: c.results(p), History: history(ctx, p),
		})
	}
	now := c.clock.Now()
	d := Decide(w, now)
	c.setHeld(key, d.Held)
	if d.SharedOutage {
		c.reportOutage(ctx, key, pods[0], d.Failing, len(pods))
	}
	var errs []error
	for _, plan := range d.Restart {
		if err := c.restart(ctx, byUID[plan.Pod], plan, now); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Joined with %w: a conflict (a stale pod cache) stays one for the work loop.
		return 0, fmt.Errorf("restarting containers of workload %s: %w", key, errors.Join(errs...))
	}
	return d.RequeueAfter, nil
}

func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// restarting are the pods of the namespace with a liveness request not Completed.
func (c *Controller) restarting(ns string) (map[types.UID]bool, error) {
	crrs, err := c.crrs.ContainerRecreateRequests(ns).List(labels.SelectorFromSet(labels.Set{LabelEnhancedLiveness: "true"}))
	if err != nil {
		return nil, fmt.Errorf("listing ContainerRecreateRequests in %s: %w", ns, err)
	}
	out := map[types.UID]bool{}
	for _, crr := range crrs {
		if crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted || crr.DeletionTimestamp != nil {
			continue
		}
		for _, ref := range crr.OwnerReferences {
			if ref.Kind == "Pod" {
				out[ref.UID] = true
			}
		}
	}
	return out, nil
}

// results are the pod's enhanced liveness results in its node's NodePodProbe.
func (c *Controller) results(pod *corev1.Pod) []Container {
	npp, err := c.probes.Get(pod.Spec.NodeName)
	if err != nil {
		return nil
	}
	for _, s := range npp.Status.PodProbeStatuses {
		if s.UID != string(pod.UID) {
			continue
		}
		var out []Container
		for _, st := range livenessStates(s.ProbeStates) {
			p, _ := nodeprobe.ParseProbeName(st.Name)
			out = append(out, Container{Name: p.Container, Failed: st.State == appsv1alpha1.ProbeFailed, Since: st.LastTransitionTime.Time})
		}
		return out
	}
	return nil
}

// history reads the pod's RestartsAnnotation; a value that does not parse counts as none (only
// kruise-controller writes it).
func history(ctx context.Context, pod *corev1.Pod) map[string]Restart {
	raw := pod.Annotations[RestartsAnnotation]
	if raw == "" {
		return nil
	}
	var out map[string]Restart
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring the pod's restart history", "pod", klog.KObj(pod), "annotation", RestartsAnnotation)
		return nil
	}
	return out
}

// maxUnavailable is the workload's budget from its pods' annotation: the smallest valid value
// (the pods share a template; during a change of it the stricter one holds).
func (c *Controller) maxUnavailable(ctx context.Context, pods []*corev1.Pod) int {
	best := math.MaxInt
	for _, p := range pods {
		v, ok := p.Annotations[MaxUnavailableAnnotation]
		if !ok {
			continue
		}
		n, err := MaxUnavailable(v, len(pods))
		if err != nil {
			klog.FromContext(ctx).Info("Ignoring an invalid max-unavailable annotation", "pod", klog.KObj(p), "err", err)
			c.recorder.Eventf(p, corev1.EventTypeWarning, ReasonBadBudget, "Annotation %s: %v; using %s", MaxUnavailableAnnotation, err, DefaultMaxUnavailable)
			continue
		}
		best = min(best, n)
	}
	if best == math.MaxInt {
		best, _ = MaxUnavailable("", len(pods))
	}
	return best
}

// reportOutage warns, on the pods' owner (or the pod), that none is restarted, at most every
// outageEventEvery per workload.
func (c *Controller) reportOutage(ctx context.Context, key string, pod *corev1.Pod, failing, total int) {
	klog.FromContext(ctx).Info("Holding liveness restarts: more than half of the workload's pods fail", "failing", failing, "pods", total)
	if !c.shouldWarn(key, c.clock.Now()) {
		return
	}
	var target runtime.Object = pod
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		target = &corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Namespace: pod.Namespace, UID: ref.UID}
	}
	c.recorder.Eventf(target, corev1.EventTypeWarning, ReasonSharedOutage,
		"%d of %d pods fail their enhanced liveness probe at once: a shared dependency, not the pods; no container is restarted until fewer than half fail", failing, total)
}

// restart creates the pod's request for the plan's containers, then records the restart on the
// pod. The request is named after the failure it answers, so that a retry, a stale cache or a new
// leader finds it there instead of creating a second one; and it is created first, so that a
// restart is never recorded that was not asked for.
func (c *Controller) restart(ctx context.Context, pod *corev1.Pod, plan Plan, now time.Time) error {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "containers", plan.Containers)
	crr := request(pod, plan)
	_, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(pod.Namespace).Create(ctx, crr, metav1.CreateOptions{})
	created := err == nil
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	if err := c.record(ctx, pod, plan.Containers, now); err != nil {
		return err
	}
	if !created {
		logger.V(2).Info("The request for this failure exists already; recorded the restart", "crr", crr.Name)
		return nil
	}
	c.restarts.WithLabelValues().Inc()
	logger.Info("Restarting containers whose enhanced liveness probe failed", "crr", crr.Name)
	c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonRestart,
		"Enhanced liveness probe of %s failed; restarting through ContainerRecreateRequest %s", strings.Join(plan.Containers, ", "), crr.Name)
	return nil
}

// record writes each container's restart at now into the pod's RestartsAnnotation. The patch
// carries the cached pod's resourceVersion: from a stale cache it fails (and is retried from a
// fresh one) rather than overwrite a newer history.
func (c *Controller) record(ctx context.Context, pod *corev1.Pod, containers []string, now time.Time) error {
	h := history(ctx, pod)
	if h == nil {
		h = map[string]Restart{}
	}
	for _, name := range containers {
		h[name] = NextRestart(h[name], now)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encoding the restart history: %w", err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": pod.ResourceVersion,
		"annotations":     map[string]string{RestartsAnnotation: string(raw)},
	}})
	if err != nil {
		return fmt.Errorf("encoding the pod patch: %w", err)
	}
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("recording the restart on pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// request is the ContainerRecreateRequest for the plan, in the pod's namespace and owned by it.
func request(pod *corev1.Pod, plan Plan) *appsv1alpha1.ContainerRecreateRequest {
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	var ctrs []appsv1alpha1.ContainerRecreateRequestContainer
	for _, name := range plan.Containers {
		ctrs = append(ctrs, appsv1alpha1.ContainerRecreateRequestContainer{Name: name})
	}
	return &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RequestName(pod, plan),
			Namespace: pod.Namespace,
			Labels:    map[string]string{LabelEnhancedLiveness: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    pod.Name,
			Containers: ctrs,
			Strategy: &appsv1alpha1.ContainerRecreateRequestStrategy{
				// A hung container may also be one still starting; each container is restarted
				// whatever the others' fate.
				FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
				ForceRecreate: true,
			},
			ActiveDeadlineSeconds:   ptr.To(grace + crrDeadlineSlack),
			TTLSecondsAfterFinished: ptr.To(crrTTL),
		},
	}
}

// RequestName names the request answering the plan's failure of the pod:
// <pod name, at most 40 characters>-liveness-<hash of pod UID, containers and failure time>.
func RequestName(pod *corev1.Pod, plan Plan) string {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%s/%s/%d", pod.UID, strings.Join(plan.Containers, ","), plan.Since.UnixNano())
	prefix := pod.Name
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-.")
	}
	return fmt.Sprintf("%s-liveness-%08x", prefix, h.Sum32())
}
