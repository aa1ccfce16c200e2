package imagepulljob

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
	"github.com/nodekruise/kruise/pkg/durations"
	"github.com/nodekruise/kruise/pkg/imageref"
)

// Event reasons recorded on jobs.
const (
	ReasonStarted          = "Started"
	ReasonCompleted        = "Completed"
	ReasonFailed           = "Failed"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonInvalidImage     = "InvalidImage"
	ReasonInvalidSelector  = "InvalidSelector"
)

// Defaults of the request fields (the CRD defaults them too).
const (
	defaultTimeoutSeconds = int32(600)
	defaultBackoffLimit   = int32(3)
)

// nodeState is where one target node stands for a job.
type nodeState int

const (
	statePending nodeState = iota // not asked yet
	stateActive                   // asked, no result for the current version
	stateSucceeded
	stateFailed
)

// syncJob decides a job's plan and status.
func (c *Controller) syncJob(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	job, err := c.jobLister.ImagePullJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone: the node syncs drop its owner references (they check that
		// the job really is gone).
		old := c.plans.get(key)
		c.enqueueNodes(c.plans.set(key, nil))
		if old != nil {
			c.enqueueNodes(toSet(c.nodesOwnedBy(old.uid)))
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "imagePullJob", klog.KObj(job))
	ctx = klog.NewContext(ctx, logger)
	old := c.plans.get(key)
	if old != nil && old.uid != string(job.UID) {
		old = nil
	}
	if job.DeletionTimestamp != nil || job.Status.CompletionTime != nil || (old != nil && old.finished) {
		return c.withdraw(ctx, job)
	}

	now := c.clock.Now()
	status := job.Status.DeepCopy()
	if status.StartTime == nil {
		status.StartTime = ptr.To(metav1.NewTime(now))
	}
	repo, tag, err := imageref.Split(job.Spec.Image)
	if err != nil {
		return c.fail(ctx, job, status, ReasonInvalidImage, err.Error())
	}
	targets, err := c.targets(job)
	if err != nil {
		return c.fail(ctx, job, status, ReasonInvalidSelector, err.Error())
	}

	unusable := c.unusableSecrets(job)
	e := c.evaluate(job, repo, tag, targets, old, status.StartTime.Time, now)
	p := &plan{
		key: key, uid: string(job.UID), repo: repo, tag: tag,
		generation: job.Generation, nodes: e.planNodes, request: buildRequest(job, unusable), full: e.full,
	}
	status.Desired = int32(len(targets))
	status.Active, status.Succeeded, status.Failed = e.active, e.succeeded, e.failed
	status.FailedNodes = e.failedNodes
	records := e.failures
	var after time.Duration
	complete, deadline := false, false
	if neverPolicy(job) {
		after = e.recheckAfter
	} else if ads := job.Spec.CompletionPolicy.ActiveDeadlineSeconds; ads != nil {
		end := status.StartTime.Add(durations.Seconds(*ads))
		if !now.Before(end) {
			complete, deadline = true, e.active+e.pending > 0
		} else {
			after = end.Sub(now)
		}
	}
	if !neverPolicy(job) && e.active == 0 && e.pending == 0 {
		complete = true
	}
	if deadline {
		// What has not finished by the deadline counts as failed.
		status.Failed += e.active + e.pending
		status.FailedNodes = append(status.FailedNodes, e.unfinishedNodes...)
		sort.Strings(status.FailedNodes)
		status.Active = 0
		for _, n := range e.unfinishedNodes {
			records[n] = deadlineFailure(n, *job.Spec.CompletionPolicy.ActiveDeadlineSeconds, e.waiting[n], e.lastMessage[n])
		}
	}
	status.Failures, status.OmittedFailures = boundFailures(status.FailedNodes, records)
	if deadline {
		status.Message = progressMessage(status, 0, job)
	} else {
		status.Message = progressMessage(status, e.pending, job)
	}
	status.Message += failureNote(status.Failures, status.OmittedFailures)
	if complete {
		status.CompletionTime = ptr.To(metav1.NewTime(now))
		if deadline {
			status.Message = fmt.Sprintf("Deadline of %ds exceeded: %s", *job.Spec.CompletionPolicy.ActiveDeadlineSeconds, status.Message)
		} else {
			status.Message = "Completed: " + status.Message
		}
	}
	status.Message += secretsNote(unusable, job.Spec.PullSecrets)

	started := job.Status.StartTime == nil
	if err := c.writeStatus(ctx, job, status); err != nil {
		return 0, err
	}
	if started {
		c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonStarted, "Started pulling %s on %d nodes", job.Spec.Image, len(targets))
	}
	c.reportFull(job, old, e)
	if complete {
		c.reportCompletion(job, status, deadline)
		c.finish(key, job)
		return c.ttlAfter(ctx, job, status.CompletionTime.Time)
	}

	touched := c.plans.set(key, p)
	if old == nil || old.generation != job.Generation || !slices.Equal(old.request.secrets, p.request.secrets) {
		c.enqueueNodes(touched)
	} else {
		c.enqueueNodes(e.needWrite)
		for n := range touched {
			if _, ok := p.nodes[n]; !ok {
				c.nodeQueue.Add(n) // no longer targeted
			}
		}
	}
	for _, n := range c.nodesOwnedBy(string(job.UID)) {
		if _, ok := p.nodes[n]; !ok {
			c.nodeQueue.Add(n)
		}
	}
	return after, nil
}

// finish publishes an empty, finished plan for the job and queues every node
// still carrying its request.
func (c *Controller) finish(key string, job *v1beta1.ImagePullJob) {
	c.enqueueNodes(c.plans.set(key, &plan{key: key, uid: string(job.UID), finished: true, generation: job.Generation}))
	c.enqueueNodes(toSet(c.nodesOwnedBy(string(job.UID))))
}

// withdraw handles a finished or deleting job: its requests leave every
// NodeImage; a finished job is deleted ttlSecondsAfterFinished after it
// completed; a deleting job loses the (OpenKruise) protection finalizer once
// no NodeImage names it.
func (c *Controller) withdraw(ctx context.Context, job *v1beta1.ImagePullJob) (time.Duration, error) {
	key := job.Namespace + "/" + job.Name
	if p := c.plans.get(key); p == nil || !p.finished || p.uid != string(job.UID) {
		c.finish(key, job)
	}
	if job.DeletionTimestamp != nil {
		if hasFinalizer(job, v1beta1.ProtectionFinalizer) && len(c.nodesOwnedBy(string(job.UID))) == 0 {
			cp := job.DeepCopy()
			cp.Finalizers = nil
			for _, f := range job.Finalizers {
				if f != v1beta1.ProtectionFinalizer {
					cp.Finalizers = append(cp.Finalizers, f)
				}
			}
			if _, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
		}
		return 0, nil
	}
	if job.Status.CompletionTime == nil {
		return 0, nil // completed by us; the cache has not caught up
	}
	return c.ttlAfter(ctx, job, job.Status.CompletionTime.Time)
}

// ttlAfter deletes the job once ttlSecondsAfterFinished has passed since
// completed, or says when to look again.
func (c *Controller) ttlAfter(ctx context.Context, job *v1beta1.ImagePullJob, completed time.Time) (time.Duration, error) {
	ttl := job.Spec.CompletionPolicy.TTLSecondsAfterFinished
	if ttl == nil || neverPolicy(job) {
		return 0, nil
	}
	at := completed.Add(time.Duration(*ttl) * time.Second)
	if now := c.clock.Now(); now.Before(at) {
		return at.Sub(now), nil
	}
	err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &job.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Deleted finished job after its ttl", "ttlSecondsAfterFinished", *ttl)
	return 0, nil
}

// FailedPrefix starts the message of a job that was completed as failed
// before it could pull anywhere (an invalid image or selector): such a job
// has nothing desired, succeeded or failed to tell it by.
const FailedPrefix = "Failed: "

// CouldNotRun reports whether the job was completed as failed before it
// could pull anywhere.
func CouldNotRun(status *v1beta1.ImagePullJobStatus) bool {
	return status.CompletionTime != nil && status.Desired == 0 && strings.HasPrefix(status.Message, FailedPrefix)
}

// fail completes the job as failed at once (it cannot run at all).
func (c *Controller) fail(ctx context.Context, job *v1beta1.ImagePullJob, status *v1beta1.ImagePullJobStatus, reason, msg string) (time.Duration, error) {
	status.CompletionTime = ptr.To(metav1.NewTime(c.clock.Now()))
	status.Message = FailedPrefix + msg
	status.Active = 0
	if err := c.writeStatus(ctx, job, status); err != nil {
		return 0, err
	}
	c.recorder.Event(job, corev1.EventTypeWarning, reason, msg)
	c.recorder.Event(job, corev1.EventTypeWarning, ReasonFailed, status.Message)
	c.finish(job.Namespace+"/"+job.Name, job)
	return c.ttlAfter(ctx, job, status.CompletionTime.Time)
}

func (c *Controller) reportCompletion(job *v1beta1.ImagePullJob, status *v1beta1.ImagePullJobStatus, deadline bool) {
	if deadline {
		c.recorder.Event(job, corev1.EventTypeWarning, ReasonDeadlineExceeded, status.Message)
	}
	if status.Failed > 0 {
		c.recorder.Event(job, corev1.EventTypeWarning, ReasonFailed, status.Message)
		return
	}
	c.recorder.Event(job, corev1.EventTypeNormal, ReasonCompleted, status.Message)
}

// writeStatus updates the job's status unless it is unchanged.
func (c *Controller) writeStatus(ctx context.Context, job *v1beta1.ImagePullJob, status *v1beta1.ImagePullJobStatus) error {
	if apiequality.Semantic.DeepEqual(&job.Status, status) {
		return nil
	}
	cp := job.DeepCopy()
	cp.Status = *status
	_, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	return err
}

// progressMessage is the status message of a running job, e.g.
// "3/10 nodes succeeded, 1 failed, 2 pulling, 4 waiting".
func progressMessage(s *v1beta1.ImagePullJobStatus, pending int32, job *v1beta1.ImagePullJob) string {
	if s.Desired == 0 {
		return "no nodes selected"
	}
	msg := fmt.Sprintf("%d/%d nodes succeeded, %d failed, %d pulling", s.Succeeded, s.Desired, s.Failed, s.Active)
	if pending > 0 {
		msg += fmt.Sprintf(", %d waiting", pending)
		if parallelismOf(job, s.Desired) == 0 {
			msg += " (paused: parallelism is 0)"
		}
	}
	return msg
}

// evaluation is what a job's target nodes say.
type evaluation struct {
	planNodes                 map[string]int64
	active, succeeded, failed int32
	pending                   int32
	failedNodes               []string
	unfinishedNodes           []string
	// failures records why each of failedNodes failed.
	failures map[string]v1beta1.NodeFailure
	// waiting: unfinished nodes not asked yet; lastMessage: the daemon's
	// latest message for an unfinished node (a retried attempt's error).
	waiting     map[string]bool
	lastMessage map[string]string
	// full: planned nodes whose NodeImage had no room for the request.
	full map[string]bool
	// needWrite: planned nodes whose NodeImage does not carry the request
	// (or a re-pull) yet.
	needWrite map[string]bool
	// recheckAfter: when a Never job's oldest result becomes due again.
	recheckAfter time.Duration
}

// candidate is a node that may be given a slot.
type candidate struct {
	node       string
	repullFrom int64
	renewing   bool      // a Never job's result due for renewal
	since      time.Time // when the renewed result was reached
}

// evaluate classifies every target node and hands free slots (parallelism)
// to waiting nodes, then (Never) to nodes whose result is due for renewal.
func (c *Controller) evaluate(job *v1beta1.ImagePullJob, repo, tag string, targets []*v1beta1.NodeImage, old *plan, start, now time.Time) evaluation {
	e := evaluation{planNodes: map[string]int64{}, needWrite: map[string]bool{},
		failures: map[string]v1beta1.NodeFailure{}, waiting: map[string]bool{}, lastMessage: map[string]string{}, full: map[string]bool{}}
	never := neverPolicy(job)
	uid := job.UID
	var pending, renew []candidate
	var nextDue time.Time
	due := func(at time.Time) {
		if nextDue.IsZero() || at.Before(nextDue) {
			nextDue = at
		}
	}
	for _, ni := range targets {
		n := ni.Name
		entry := ni.TagSpec(repo, tag)
		ours := entry != nil && hasOwner(entry, uid)
		var st *v1beta1.ImageTagStatus
		if entry != nil {
			st = findStatus(ni, repo, tag, entry.Version)
		}
		if old != nil {
			v, planned := old.nodes[n]
			if why, full := c.refusals.get(n, old.key); planned && full {
				// The node's NodeImage had no room for the request
				// (budget.go): failed while so; it stays planned, so a
				// node sync that finds room adds it.
				e.planNodes[n] = v
				e.failed++
				e.failedNodes = append(e.failedNodes, n)
				e.failures[n] = nodeFailure(n, ReasonNodeImageFull, "NodeImage "+n+" has no room for this job's request: "+why)
				e.full[n] = true
				continue
			}
			if planned && (!ours || (v != 0 && v == entry.Version)) {
				// Asked in an earlier sync, not written yet.
				e.planNodes[n] = v
				e.needWrite[n] = true
				e.active++
				e.unfinishedNodes = append(e.unfinishedNodes, n)
				continue
			}
		}
		if ours {
			e.planNodes[n] = 0
			switch {
			case st != nil && st.Phase == v1beta1.ImagePhaseSucceeded:
				e.succeeded++
				if never {
					since := c.results.since(n, repo, st, now)
					if at := since.Add(c.repull); !now.Before(at) {
						renew = append(renew, candidate{node: n, repullFrom: entry.Version, renewing: true, since: since})
					} else {
						due(at)
					}
				}
			case st != nil && st.Phase == v1beta1.ImagePhaseFailed:
				e.failed++
				e.failedNodes = append(e.failedNodes, n)
				e.failures[n] = nodeFailure(n, failureReason(st.Message), st.Message)
				if never {
					since := c.results.since(n, repo, st, now)
					if at := since.Add(c.retryFailed); !now.Before(at) {
						renew = append(renew, candidate{node: n, repullFrom: entry.Version, renewing: true, since: since})
					} else {
						due(at)
					}
				}
			default:
				e.active++
				e.unfinishedNodes = append(e.unfinishedNodes, n)
				if st != nil && st.Message != "" {
					e.lastMessage[n] = st.Message
				}
			}
			continue
		}
		// Not ours: another job's result for the same tag may do.
		if entry != nil && st != nil && (st.Phase == v1beta1.ImagePhaseSucceeded || st.Phase == v1beta1.ImagePhaseFailed) {
			// Reached since the job started, on the controller's clock
			// (results.go): the node's own dates are not comparable.
			fresh := c.results.freshSince(n, repo, st, start)
			if st.Phase == v1beta1.ImagePhaseSucceeded && (fresh || job.Spec.ImagePullPolicy != v1beta1.PullAlways) {
				e.succeeded++
				if never {
					// Keep the image: own the tag too, no pull needed.
					e.planNodes[n] = 0
					e.needWrite[n] = true
				}
				continue
			}
			pending = append(pending, candidate{node: n, repullFrom: entry.Version})
			continue
		}
		pending = append(pending, candidate{node: n})
	}
	slots := parallelismOf(job, int32(len(targets))) - e.active
	sort.Slice(renew, func(i, j int) bool { return renew[i].since.Before(renew[j].since) })
	for _, cand := range append(pending, renew...) {
		if slots <= 0 {
			break
		}
		slots--
		if cand.renewing {
			// A result being renewed is a pull under way again.
			if containsNode(e.failedNodes, cand.node) {
				e.failed--
				e.failedNodes = removeNode(e.failedNodes, cand.node)
				delete(e.failures, cand.node)
			} else {
				e.succeeded--
			}
		}
		e.planNodes[cand.node] = cand.repullFrom
		e.needWrite[cand.node] = true
		e.active++
		e.unfinishedNodes = append(e.unfinishedNodes, cand.node)
	}
	for _, cand := range pending {
		if _, ok := e.planNodes[cand.node]; !ok {
			e.pending++
			e.unfinishedNodes = append(e.unfinishedNodes, cand.node)
			e.waiting[cand.node] = true
		}
	}
	if !nextDue.IsZero() {
		e.recheckAfter = max(nextDue.Sub(now), time.Second)
	}
	if len(renew) > 0 && e.recheckAfter == 0 {
		// Renewals waiting for a slot are looked at when a pull finishes
		// (its status update queues the job); this is a fallback.
		e.recheckAfter = c.retryFailed
	}
	sort.Strings(e.failedNodes)
	return e
}

func containsNode(list []string, n string) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func removeNode(list []string, n string) []string {
	out := list[:0]
	for _, x := range list {
		if x != n {
			out = append(out, x)
		}
	}
	return out
}

// resultTime is when a pull result was reached (its start if it has no
// end), on the node's clock: see results.go before comparing it with
// anything.
func resultTime(st *v1beta1.ImageTagStatus) time.Time {
	switch {
	case st.CompletionTime != nil:
		return st.CompletionTime.Time
	case st.StartTime != nil:
		return st.StartTime.Time
	}
	return time.Time{}
}

// parallelismOf is how many nodes may be active at once: an integer, an
// integer string or (accepted although the schema forbids it) a percentage
// of desired, rounded up. Default 1; an invalid value counts as 1.
func parallelismOf(job *v1beta1.ImagePullJob, desired int32) int32 {
	p := job.Spec.Parallelism
	if p == nil {
		return 1
	}
	if p.Type == intstr.Int {
		return max(p.IntVal, 0)
	}
	s := strings.TrimSpace(p.StrVal)
	if strings.HasSuffix(s, "%") {
		v, err := intstr.GetScaledValueFromIntOrPercent(p, int(desired), true)
		if err != nil || v < 0 {
			return 1
		}
		return int32(min(v, math.MaxInt32))
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return 1
	}
	return int32(v)
}

func neverPolicy(job *v1beta1.ImagePullJob) bool {
	return job.Spec.CompletionPolicy.Type == v1beta1.Never
}

// targets lists the NodeImages of the job's nodes, sorted by name.
func (c *Controller) targets(job *v1beta1.ImagePullJob) ([]*v1beta1.NodeImage, error) {
	var out []*v1beta1.NodeImage
	byName := func(names map[string]bool) error {
		for n := range names {
			ni, err := c.niLister.Get(n)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, ni)
		}
		return nil
	}
	switch kind := selectorKind(job); {
	case kind == selectorNames:
		if err := byName(toSet(job.Spec.Selector.Names)); err != nil {
			return nil, err
		}
	case kind == selectorLabels:
		sel, err := nodeSelector(job)
		if err != nil {
			return nil, err
		}
		if out, err = c.niLister.List(sel); err != nil {
			return nil, err
		}
	case strings.HasPrefix(kind, podSelectorPrefix):
		sel, err := podSelector(job)
		if err != nil {
			return nil, err
		}
		pods, err := c.podLister.Pods(job.Namespace).List(sel)
		if err != nil {
			return nil, err
		}
		nodes := map[string]bool{}
		for _, p := range pods {
			if p.Spec.NodeName != "" && !podTerminal(p) {
				nodes[p.Spec.NodeName] = true
			}
		}
		if err := byName(nodes); err != nil {
			return nil, err
		}
	default:
		var err error
		if out, err = c.niLister.List(labels.Everything()); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podTerminal: a finished pod no longer needs images on its node.
func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func nodeSelector(job *v1beta1.ImagePullJob) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(&job.Spec.Selector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("invalid selector: %w", err)
	}
	return sel, nil
}

func podSelector(job *v1beta1.ImagePullJob) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("invalid podSelector: %w", err)
	}
	return sel, nil
}

// buildRequest is the job's contribution to a NodeImage; the pull secrets
// in unusable are left out (they are never copied for the daemon).
func buildRequest(job *v1beta1.ImagePullJob, unusable map[string]string) request {
	r := request{
		owner: corev1.ObjectReference{
			APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ImagePullJob",
			Namespace: job.Namespace, Name: job.Name, UID: job.UID,
		},
		created:         job.CreationTimestamp.Time,
		imagePullPolicy: job.Spec.ImagePullPolicy,
		pullPolicy: v1beta1.ImageTagPullPolicy{
			TimeoutSeconds: ptr.To(defaultTimeoutSeconds),
			BackoffLimit:   ptr.To(defaultBackoffLimit),
		},
	}
	if r.imagePullPolicy == "" {
		r.imagePullPolicy = v1beta1.PullIfNotPresent
	}
	if pp := job.Spec.PullPolicy; pp != nil {
		if pp.TimeoutSeconds != nil {
			r.pullPolicy.TimeoutSeconds = ptr.To(*pp.TimeoutSeconds)
		}
		if pp.BackoffLimit != nil {
			r.pullPolicy.BackoffLimit = ptr.To(*pp.BackoffLimit)
		}
	}
	if cp := job.Spec.CompletionPolicy; cp.Type != v1beta1.Never && cp.ActiveDeadlineSeconds != nil {
		r.pullPolicy.ActiveDeadlineSeconds = ptr.To(*cp.ActiveDeadlineSeconds)
		if cp.TTLSecondsAfterFinished != nil {
			// The tag's ttl counts from the pull's end on that node, the
			// job's from the job's end: deadline + ttl after the pull ends
			// is never before the job itself is deleted, so the safety net
			// cannot remove a tag the running job still reads.
			r.pullPolicy.TTLSecondsAfterFinished = ptr.To(int32(min(*cp.ActiveDeadlineSeconds+int64(*cp.TTLSecondsAfterFinished), math.MaxInt32)))
		}
	}
	for _, s := range job.Spec.PullSecrets {
		if _, bad := unusable[s]; !bad {
			r.secrets = append(r.secrets, copyRef(job.Namespace, s))
		}
	}
	sortRefs(r.secrets)
	if job.Spec.SandboxConfig != nil {
		r.sandbox = job.Spec.SandboxConfig.DeepCopy()
	}
	return r
}

// copyRef references the daemon-config copy of the pull secret ns/name
// (kept by pkg/controller/pullsecrets).
func copyRef(ns, name string) v1beta1.ReferenceObject { return pullsecrets.CopyRef(ns, name) }

func sortRefs(refs []v1beta1.ReferenceObject) {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Namespace != refs[j].Namespace {
			return refs[i].Namespace < refs[j].Namespace
		}
		return refs[i].Name < refs[j].Name
	})
}

func findStatus(ni *v1beta1.NodeImage, repo, tag string, version int64) *v1beta1.ImageTagStatus {
	st, ok := ni.Status.ImageStatuses[repo]
	if !ok {
		return nil
	}
	for i := range st.Tags {
		if st.Tags[i].Tag == tag && st.Tags[i].Version == version {
			return &st.Tags[i]
		}
	}
	return nil
}

func hasOwner(t *v1beta1.ImageTagSpec, uid types.UID) bool {
	for _, r := range t.OwnerReferences {
		if isJobRef(r) && r.UID == uid {
			return true
		}
	}
	return false
}

func hasFinalizer(job *v1beta1.ImagePullJob, f string) bool {
	for _, x := range job.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func toSet(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, x := range list {
		out[x] = true
	}
	return out
}
