package ephemeraljob

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// podState is where a target pod stands with the job's containers.
type podState int

const (
	// stateNone: the job has not added its containers to the pod.
	stateNone podState = iota
	stateWaiting
	stateRunning
	stateSucceeded
	stateFailed
)

// input is what one decision reads.
type input struct {
	job *appsv1alpha1.EphemeralJob
	// pods are the pods of the job's namespace its selector matches (the cache's).
	pods []*corev1.Pod
	now  time.Time
	// denied are the pods the requester may not reach, with why; they count as failed.
	denied map[types.UID]string
	// added are the pods the job added its containers to that the cache does not show yet.
	added map[types.UID]bool
	// blocked is why the job may act on no pod (no usable requester, a selector that does not
	// parse), with blockedReason its condition's reason; nil: it may act.
	blocked       error
	blockedReason string
}

// plan is the decision: the status to write and the pods to add the containers to now.
type plan struct {
	status appsv1alpha1.EphemeralJobStatus
	// candidates are the target pods without the containers, in order, at most as many as
	// parallelism leaves room for; each is asked about (SubjectAccessReview) before it is added.
	candidates []*corev1.Pod
	// after is when the deadline falls, zero when none is pending.
	after time.Duration
}

// decide is the job's status and its next pods, from the pods and what the controller knows.
func decide(in input) plan {
	job := in.job
	st := *job.Status.DeepCopy()
	now := metav1.NewTime(in.now)
	if st.StartTime == nil {
		st.StartTime = &now
	}
	if findCondition(st.Conditions, appsv1alpha1.EJobInitialized) == nil {
		setCondition(&st, appsv1alpha1.EJobInitialized, corev1.ConditionTrue, string(appsv1alpha1.EJobInitialized), "", now)
	}
	if in.blocked != nil {
		st.Phase = appsv1alpha1.EphemeralJobError
		setCondition(&st, appsv1alpha1.EJobError, corev1.ConditionTrue, in.blockedReason, fmt.Sprintf("acting on no pod: %v", in.blocked), now)
		return plan{status: st}
	}
	targets := targetsOf(job, in.pods)
	states := make([]podState, len(targets))
	st.Matches = int32(len(targets))
	st.Succeeded, st.Failed, st.Running, st.Waiting = 0, 0, 0, 0
	var deniedNames []string
	for i, p := range targets {
		states[i] = stateOf(job, p)
		if states[i] == stateNone {
			switch {
			case in.added[p.UID]:
				states[i] = stateWaiting
			case in.denied[p.UID] != "":
				states[i] = stateFailed
				deniedNames = append(deniedNames, p.Name)
			}
		}
		switch states[i] {
		case stateSucceeded:
			st.Succeeded++
		case stateFailed:
			st.Failed++
		case stateRunning:
			st.Running++
		case stateWaiting:
			st.Waiting++
		}
	}

	replicas := st.Matches
	if job.Spec.Replicas != nil && *job.Spec.Replicas < replicas {
		replicas = *job.Spec.Replicas
	}
	finished := false
	switch {
	case st.Matches == 0:
		st.Phase = appsv1alpha1.EphemeralJobWaiting
		setCondition(&st, appsv1alpha1.EJobMatchedEmpty, corev1.ConditionTrue, "MatchEmpty", "job match no pods", now)
	case st.Succeeded == replicas:
		st.Phase, finished = appsv1alpha1.EphemeralJobSucceeded, true
		setCondition(&st, appsv1alpha1.EJobSucceeded, corev1.ConditionTrue, "JobSucceeded", "job success to run all tasks", now)
	case st.Running > 0:
		st.Phase = appsv1alpha1.EphemeralJobRunning
	case st.Succeeded+st.Failed == replicas:
		// All failed (OpenKruise), or every pod finished and some failed (OpenKruise: Unknown, forever).
		st.Phase, finished = appsv1alpha1.EphemeralJobFailed, true
		setCondition(&st, appsv1alpha1.EJobFailed, corev1.ConditionTrue, "JobFailed", "job failed to run all tasks", now)
	case st.Succeeded+st.Failed == 0:
		st.Phase = appsv1alpha1.EphemeralJobWaiting
	default:
		// Some finished, the rest wait for a slot (OpenKruise: Unknown).
		st.Phase = appsv1alpha1.EphemeralJobRunning
	}
	if st.Matches > 0 && findCondition(st.Conditions, appsv1alpha1.EJobMatchedEmpty) != nil {
		setCondition(&st, appsv1alpha1.EJobMatchedEmpty, corev1.ConditionFalse, "Matched", fmt.Sprintf("job matches %d pods", st.Matches), now)
	}
	if !finished && st.Failed > 0 {
		msg := fmt.Sprintf("EphemeralJob %s/%s: the containers failed in %d pods", job.Namespace, job.Name, st.Failed)
		if len(deniedNames) > 0 {
			msg += fmt.Sprintf(", of which %d its requester may not reach (%s)", len(deniedNames), firstNames(deniedNames))
		}
		setCondition(&st, appsv1alpha1.EJobFailed, corev1.ConditionTrue, "CreateFailed", msg, now)
	}

	var after time.Duration
	if job.Spec.Paused && !finished {
		st.Phase = appsv1alpha1.EphemeralJobPause
	} else if !finished && job.Spec.ActiveDeadlineSeconds != nil {
		deadline := st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second)
		if !in.now.Before(deadline) {
			st.Phase, finished = appsv1alpha1.EphemeralJobFailed, true
			setCondition(&st, appsv1alpha1.EJobFailed, corev1.ConditionTrue, "DeadlineExceeded",
				fmt.Sprintf("EphemeralJob %s/%s was active longer than specified deadline", job.Namespace, job.Name), now)
		} else {
			after = deadline.Sub(in.now)
		}
	}
	if len(job.Spec.Template.EphemeralContainers) == 0 {
		st.Phase, finished = appsv1alpha1.EphemeralJobError, false
		setCondition(&st, appsv1alpha1.EJobError, corev1.ConditionTrue, "Error", "job spec invalid fields.", now)
		return plan{status: st}
	}
	if finished {
		st.CompletionTime = &now
		return plan{status: st}
	}
	if job.Spec.Paused {
		return plan{status: st, after: after}
	}

	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	free := int(parallelism - st.Running - st.Waiting)
	var candidates []*corev1.Pod
	for i, p := range targets {
		if free <= 0 {
			break
		}
		if states[i] == stateNone {
			candidates = append(candidates, p)
			free--
		}
	}
	return plan{status: st, candidates: candidates, after: after}
}

func firstNames(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return fmt.Sprint(names)
	}
	return fmt.Sprintf("%v and %d more", names[:shown], len(names)-shown)
}

// targetsOf are the pods the job adds its containers to: the active pods it matches, oldest
// first (then by name), but those holding a same-named ephemeral container of someone else,
// capped at replicas.
func targetsOf(job *appsv1alpha1.EphemeralJob, pods []*corev1.Pod) []*corev1.Pod {
	sorted := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if p.Namespace != job.Namespace || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || conflicts(job, p) {
			continue
		}
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	if job.Spec.Replicas != nil && int(*job.Spec.Replicas) < len(sorted) {
		sorted = sorted[:max(*job.Spec.Replicas, 0)]
	}
	return sorted
}

// ownedBy reports whether the job added c (its mark, KRUISE_EJOB_ID = the job's uid).
func ownedBy(job *appsv1alpha1.EphemeralJob, c *corev1.EphemeralContainer) bool {
	for _, e := range c.Env {
		if e.Name == appsv1alpha1.EphemeralContainerEnvKey {
			return e.Value == string(job.UID)
		}
	}
	return false
}

// conflicts reports whether pod holds an ephemeral container named as one of the job's that
// the job did not add: the job leaves such a pod alone.
func conflicts(job *appsv1alpha1.EphemeralJob, pod *corev1.Pod) bool {
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		if inTemplate(job, c.Name) && !ownedBy(job, c) {
			return true
		}
	}
	return false
}

func inTemplate(job *appsv1alpha1.EphemeralJob, name string) bool {
	for _, c := range job.Spec.Template.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// stateOf is where pod stands with the containers the job added to it: any failed, failed;
// all succeeded, succeeded; any running, running; else waiting (a container with no status
// yet waits). stateNone when the job added none.
func stateOf(job *appsv1alpha1.EphemeralJob, pod *corev1.Pod) podState {
	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.EphemeralContainerStatuses))
	for i := range pod.Status.EphemeralContainerStatuses {
		statuses[pod.Status.EphemeralContainerStatuses[i].Name] = &pod.Status.EphemeralContainerStatuses[i]
	}
	owned, succeeded, running := 0, 0, 0
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		if !ownedBy(job, c) {
			continue
		}
		owned++
		switch containerState(statuses[c.Name]) {
		case stateFailed:
			return stateFailed
		case stateSucceeded:
			succeeded++
		case stateRunning:
			running++
		}
	}
	switch {
	case owned == 0:
		return stateNone
	case succeeded == owned:
		return stateSucceeded
	case running > 0:
		return stateRunning
	}
	return stateWaiting
}

// containerState reads one container's status: exit 0 succeeded, any other exit (or a
// container the runtime could not start) failed.
func containerState(s *corev1.ContainerStatus) podState {
	switch {
	case s == nil:
		return stateWaiting
	case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
		return stateSucceeded
	case s.State.Terminated != nil:
		return stateFailed
	case s.State.Running != nil:
		return stateRunning
	case s.State.Waiting != nil && s.State.Waiting.Reason == "RunContainerError":
		return stateFailed
	}
	return stateWaiting
}

func findCondition(conds []appsv1alpha1.EphemeralJobCondition, t appsv1alpha1.EphemeralJobConditionType) *appsv1alpha1.EphemeralJobCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// setCondition sets a condition, its times moved only when it changes: a job whose pods do not
// change writes no status.
func setCondition(st *appsv1alpha1.EphemeralJobStatus, t appsv1alpha1.EphemeralJobConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	c := findCondition(st.Conditions, t)
	if c == nil {
		st.Conditions = append(st.Conditions, appsv1alpha1.EphemeralJobCondition{Type: t, Status: status, Reason: reason, Message: msg,
			LastProbeTime: now, LastTransitionTime: now})
		return
	}
	if c.Status == status && c.Reason == reason && c.Message == msg {
		return
	}
	if c.Status != status {
		c.LastTransitionTime = now
	}
	c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, msg, now
}
