package ephemeraljob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

var errWebhooksOff = errors.New("kruise's webhooks are off (--webhook-enabled=false): nothing vouches for the requester annotation, " +
	"which the mutating webhook writes")

// defaultTTL is ttlSecondsAfterFinished when unset (OpenKruise's).
const defaultTTL = 1800 * time.Second

// maxPodsPerSync bounds the pods one sync asks about and adds containers to; the pods' updates
// bring the job back for the rest.
const maxPodsPerSync = 100

func selectorOf(job *appsv1alpha1.EphemeralJob) (labels.Selector, error) {
	if job.Spec.Selector == nil {
		return nil, errors.New("spec.selector is not set")
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	return sel, nil
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	job, err := c.jobs.EphemeralJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("ephemeralJob", klog.KObj(job)))
	if job.DeletionTimestamp != nil {
		c.forget(key)
		return 0, c.dropFinalizer(ctx, job)
	}
	if !slices.Contains(job.Finalizers, Finalizer) {
		job = job.DeepCopy()
		job.Finalizers = append(job.Finalizers, Finalizer)
		if job, err = c.kruiseClient.AppsV1alpha1().EphemeralJobs(ns).Update(ctx, job, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("adding finalizer %s: %w", Finalizer, err)
		}
	}
	if job.Status.CompletionTime != nil {
		c.forget(key)
		return c.expire(ctx, job)
	}

	in := input{job: job, now: c.clock.Now()}
	requester, rerr := ejobaccess.FromAnnotations(job.Annotations)
	sel, serr := selectorOf(job)
	switch {
	case c.webhooksOff:
		in.blocked, in.blockedReason = errWebhooksOff, ReasonWebhooksOff
	case serr != nil:
		in.blocked, in.blockedReason = serr, "InvalidSelector"
	case rerr != nil:
		in.blocked, in.blockedReason = rerr, ReasonNoRequester
	default:
		if in.pods, err = c.pods.Pods(ns).List(sel); err != nil {
			return 0, err
		}
	}
	c.mu.Lock()
	memo := c.memoOf(key, job)
	in.denied, in.added = memo.snapshot(in.pods, in.now)
	c.mu.Unlock()

	p := decide(in)
	if in.blocked != nil && (job.Status.Phase != appsv1alpha1.EphemeralJobError) {
		c.recorder.Eventf(job, corev1.EventTypeWarning, in.blockedReason, "Acting on no pod: %v", in.blocked)
	}
	// Ask about the next pods; a refusal frees its slot for the next one, asked in turn.
	var allowed []*corev1.Pod
	asked := 0
	for len(p.candidates) > 0 && asked < maxPodsPerSync {
		refused := false
		allowed = allowed[:0]
		for _, pod := range p.candidates {
			a, ok := c.cachedAnswer(memo, pod.UID, in.now)
			if !ok {
				if asked >= maxPodsPerSync {
					break
				}
				asked++
				d, err := ejobaccess.Ask(ctx, c.client.AuthorizationV1().SubjectAccessReviews(), requester, ns, pod.Name)
				if err != nil {
					return 0, err
				}
				a = answer{allowed: d.Allowed, denied: d.Denied, at: in.now}
				c.record(memo, pod.UID, a)
				if !a.allowed {
					klog.FromContext(ctx).V(2).Info("Requester may not reach the pod", "pod", klog.KObj(pod), "requester", requester.Username, "denied", a.denied)
					c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonForbidden, "User %q may not reach pod %s (denied: %s): counted as failed",
						requester.Username, pod.Name, a.denied)
				}
			}
			if a.allowed {
				allowed = append(allowed, pod)
			} else {
				refused = true
			}
		}
		if !refused {
			break
		}
		c.mu.Lock()
		in.denied, in.added = memo.snapshot(in.pods, in.now)
		c.mu.Unlock()
		p = decide(in)
	}
	if len(allowed) > maxPodsPerSync {
		allowed = allowed[:maxPodsPerSync]
	}

	var addErr error
	if len(allowed) > 0 {
		var mu sync.Mutex
		var added []string
		_, addErr = workers.SlowStart(len(allowed), func(i int) error {
			pod := allowed[i]
			err := c.addContainers(ctx, job, pod)
			switch {
			case err == nil:
				c.markAdded(memo, pod.UID, in.now)
				mu.Lock()
				added = append(added, pod.Name)
				mu.Unlock()
			case apierrors.IsNotFound(err):
				return nil // gone: no longer a target
			case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
				// The API server (or an admission plugin: PodSecurity) refuses these containers in
				// this pod: asking again would get the same answer.
				c.record(memo, pod.UID, answer{denied: "the API server refused the containers: " + err.Error(), at: in.now})
				c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonAddFailed, "Adding the containers to pod %s: %v", pod.Name, err)
				return nil
			}
			return err
		})
		if len(added) > 0 {
			slices.Sort(added)
			c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonAdded, "Added the ephemeral containers to %d pods: %s", len(added), firstNames(added))
		}
		if addErr != nil {
			c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonAddFailed, "Adding the containers: %v", addErr)
		}
		c.mu.Lock()
		in.denied, in.added = memo.snapshot(in.pods, in.now)
		c.mu.Unlock()
		p = decide(in)
	}
	if err := c.writeStatus(ctx, job, p.status); err != nil {
		return 0, err
	}
	if addErr != nil {
		return 0, addErr
	}
	if p.status.CompletionTime != nil {
		return c.expireAfter(p.status.CompletionTime.Time, job), nil
	}
	return p.after, nil
}

// writeStatus writes st when it differs from the job's.
func (c *Controller) writeStatus(ctx context.Context, job *appsv1alpha1.EphemeralJob, st appsv1alpha1.EphemeralJobStatus) error {
	if apiequality.Semantic.DeepEqual(job.Status, st) {
		return nil
	}
	j := job.DeepCopy()
	j.Status = st
	if _, err := c.kruiseClient.AppsV1alpha1().EphemeralJobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote status", "phase", st.Phase, "match", st.Matches, "succeeded", st.Succeeded,
		"failed", st.Failed, "running", st.Running, "waiting", st.Waiting)
	return nil
}

// containersFor are the template's containers as the job adds them: marked with its uid.
func containersFor(job *appsv1alpha1.EphemeralJob) []corev1.EphemeralContainer {
	out := make([]corev1.EphemeralContainer, 0, len(job.Spec.Template.EphemeralContainers))
	for _, tc := range job.Spec.Template.EphemeralContainers {
		ec := *tc.DeepCopy()
		ec.Env = slices.DeleteFunc(ec.Env, func(e corev1.EnvVar) bool { return e.Name == appsv1alpha1.EphemeralContainerEnvKey })
		ec.Env = append(ec.Env, corev1.EnvVar{Name: appsv1alpha1.EphemeralContainerEnvKey, Value: string(job.UID)})
		out = append(out, ec)
	}
	return out
}

// addContainers adds the job's containers to pod through the ephemeralcontainers subresource: a
// strategic merge patch, which appends them by name.
func (c *Controller) addContainers(ctx context.Context, job *appsv1alpha1.EphemeralJob, pod *corev1.Pod) error {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID}, // the pod we judged, not a new one of the same name
		"spec":     map[string]any{"ephemeralContainers": containersFor(job)},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		return fmt.Errorf("adding ephemeral containers to pod %s: %w", pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Added ephemeral containers", "pod", klog.KObj(pod))
	return nil
}

// dropFinalizer lets a deleted job go. Its containers stay: the API cannot remove an ephemeral
// container from a pod.
func (c *Controller) dropFinalizer(ctx context.Context, job *appsv1alpha1.EphemeralJob) error {
	if !slices.Contains(job.Finalizers, Finalizer) {
		return nil
	}
	j := job.DeepCopy()
	j.Finalizers = slices.DeleteFunc(j.Finalizers, func(f string) bool { return f == Finalizer })
	if _, err := c.kruiseClient.AppsV1alpha1().EphemeralJobs(j.Namespace).Update(ctx, j, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer %s: %w", Finalizer, err)
	}
	if job.Status.Succeeded+job.Status.Failed+job.Status.Running+job.Status.Waiting > 0 {
		c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonNotRemovable,
			"Ephemeral containers cannot be removed from pods: those the job added stay until their pods are deleted")
	}
	return nil
}

func (c *Controller) expireAfter(completed time.Time, job *appsv1alpha1.EphemeralJob) time.Duration {
	ttl := defaultTTL
	if job.Spec.TTLSecondsAfterFinished != nil {
		ttl = time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second
	}
	return max(completed.Add(ttl).Sub(c.clock.Now()), 0)
}

// expire deletes a finished job once its TTL has passed, or says when to look again.
func (c *Controller) expire(ctx context.Context, job *appsv1alpha1.EphemeralJob) (time.Duration, error) {
	if left := c.expireAfter(job.Status.CompletionTime.Time, job); left > 0 {
		return left, nil
	}
	err := c.kruiseClient.AppsV1alpha1().EphemeralJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &job.UID},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("deleting the job after ttlSecondsAfterFinished: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the finished job after its TTL")
	return 0, nil
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.memo, key)
	c.mu.Unlock()
}

func (c *Controller) cachedAnswer(m *jobMemo, uid types.UID, now time.Time) (answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := m.access[uid]
	if !ok || (a.allowed && now.Sub(a.at) >= allowedFor) {
		return answer{}, false
	}
	return a, true
}

func (c *Controller) record(m *jobMemo, uid types.UID, a answer) {
	c.mu.Lock()
	m.access[uid] = a
	c.mu.Unlock()
}

func (c *Controller) markAdded(m *jobMemo, uid types.UID, now time.Time) {
	c.mu.Lock()
	m.added[uid] = now
	c.mu.Unlock()
}

// snapshot are the pods refused and those the containers were added to (not yet in the cache);
// it forgets the pods gone, and the additions the cache shows or that are too old. The caller
// holds c.mu.
func (m *jobMemo) snapshot(pods []*corev1.Pod, now time.Time) (map[types.UID]string, map[types.UID]bool) {
	present := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		present[p.UID] = p
	}
	denied := map[types.UID]string{}
	for uid, a := range m.access {
		if present[uid] == nil {
			delete(m.access, uid)
		} else if !a.allowed {
			denied[uid] = a.denied
		}
	}
	added := map[types.UID]bool{}
	for uid, at := range m.added {
		p := present[uid]
		if p == nil || now.Sub(at) >= addedFor || hasOwned(p, m.uid) {
			delete(m.added, uid)
			continue
		}
		added[uid] = true
	}
	return denied, added
}

func hasOwned(pod *corev1.Pod, uid types.UID) bool {
	for i := range pod.Spec.EphemeralContainers {
		for _, e := range pod.Spec.EphemeralContainers[i].Env {
			if e.Name == appsv1alpha1.EphemeralContainerEnvKey && e.Value == string(uid) {
				return true
			}
		}
	}
	return false
}
