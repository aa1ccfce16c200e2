package broadcastjob

import (
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
)

// Event reasons recorded on BroadcastJobs.
const (
	ReasonCreateFailed = "FailedCreate"
	ReasonDeleted      = "SuccessfulDelete"
	ReasonDeleteFailed = "FailedDelete"
	ReasonCompleted    = "JobComplete"
	ReasonFailed       = "JobFailed"
	ReasonDeadline     = "DeadlineExceeded"
	ReasonPaused       = "Paused"
	ReasonContinue     = "Continue"
)

// Event is one Event the plan asks to record on the job.
type Event struct {
	Type, Reason, Message string
}

// Plan is what one pass does to a job: the status to write, the nodes to give a pod, the pods
// to delete, the Events to record, whether to delete the job itself (its TTL passed), and when
// to look again.
type Plan struct {
	Status v1beta1.BroadcastJobStatus
	// Create names nodes that have no pod of the job, in name order, at most what parallelism
	// leaves and workers.Burst.
	Create []string
	// Delete are active pods on nodes that no longer fit or are gone, a node's surplus pods,
	// and, when the job finishes, the pods still running.
	Delete    []*corev1.Pod
	Events    []Event
	DeleteJob bool
	// Requeue: look again after it (a deadline, a TTL); zero: only on the next event.
	Requeue time.Duration
}

// Finished reports whether job is done for good: completion policy Always and a Complete or
// Failed condition true. A job of policy Never never finishes.
func Finished(job *v1beta1.BroadcastJob) bool {
	if job.Spec.CompletionPolicy.Type == v1beta1.Never {
		return false
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == v1beta1.JobComplete || c.Type == v1beta1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podClass is how a pod counts for its job.
type podClass int

const (
	// classActive: not ended, not being deleted, within the restart limit.
	classActive podClass = iota
	classSucceeded
	// classFailed: phase Failed, or an OnFailure pod whose containers restarted more than
	// failurePolicy.restartLimit times in all (OpenKruise's rule); such a pod may still run.
	classFailed
	// classTerminating: being deleted before it ended; counted nowhere.
	classTerminating
)

func classify(pod *corev1.Pod, restartLimit int32) podClass {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded:
		return classSucceeded
	case pod.Status.Phase == corev1.PodFailed:
		return classFailed
	case pod.DeletionTimestamp != nil:
		return classTerminating
	case pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && restarts(pod) > restartLimit:
		return classFailed
	}
	return classActive
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.InitContainerStatuses {
		n += s.RestartCount
	}
	for _, s := range pod.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// stillRunning: a pod that counts as ended or failed for the job but whose containers may
// still run (not in a terminal phase, not being deleted).
func stillRunning(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Fits reports whether a new pod of job's template may go to node (OpenKruise's rules): the
// template's nodeName, nodeSelector and required node affinity match, every NoSchedule and
// NoExecute taint is tolerated (no daemon tolerations are added), a cordoned node only when the
// template tolerates node.kubernetes.io/unschedulable, and the pod's requests fit the node's
// allocatable (other pods not counted). extra are tolerations besides the template's: those of a
// pod already made for the node (the API server may have added some, e.g. the not-ready and
// unreachable ones of DefaultTolerationSeconds, which the taint manager honours).
func Fits(node *corev1.Node, template *corev1.PodTemplateSpec, extra []corev1.Toleration) nodefit.Fit {
	return fitsWith(nodefit.NewChecker(template, nil), node, extra)
}

// fitsWith is Fits with the template's rules prepared once for every node of a pass.
func fitsWith(c *nodefit.Checker, node *corev1.Node, extra []corev1.Toleration) nodefit.Fit {
	fit := c.Check(node, extra)
	if fit.Schedule && !(c.ToleratesUnschedulable(node) && c.RequestsFit(node)) {
		fit.Schedule = false
	}
	return fit
}

// nodeState is what one node holds of the job.
type nodeState struct {
	pods []*corev1.Pod
}

// Decide plans one pass over job (its status as last written) given every node and the job's
// pods. It reads nothing else, changes nothing it is given, and is the whole of the job's rules:
//   - a finished job only waits for its TTL (then DeleteJob);
//   - each node holds at most one pod of the job: a node with none that Fits gets one (up to
//     parallelism, in name order); a node whose only pod is being deleted waits for it to go; a
//     pod whose node is gone, or no longer matches (nodeName, affinity, an untolerated NoExecute
//     taint; a pod not yet bound also on NoSchedule, cordon and resources) is deleted while
//     active; surplus pods on a node (older kruise or a racing writer) are deleted newest first;
//   - desired counts the nodes that fit or keep their pod; active, succeeded and failed count the
//     pods that exist (restartLimit as classify says), so a pod never created or already gone is
//     never counted;
//   - paused, failure policies, the deadline and completion as OpenKruise v1.9.0.
func Decide(job *v1beta1.BroadcastJob, nodes []*corev1.Node, pods []*corev1.Pod, now time.Time) Plan {
	p := Plan{Status: *job.Status.DeepCopy()}
	st := &p.Status
	always := job.Spec.CompletionPolicy.Type != v1beta1.Never

	if Finished(job) {
		// Pods the finishing pass could not delete are deleted now.
		stopRunning(&p, pods, map[*corev1.Pod]bool{})
		if ttl := job.Spec.CompletionPolicy.TTLSecondsAfterFinished; ttl != nil && st.CompletionTime != nil {
			at := st.CompletionTime.Add(time.Duration(*ttl) * time.Second)
			if now.Before(at) {
				p.Requeue = at.Sub(now)
			} else {
				p.DeleteJob = true
			}
		}
		return p
	}
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
	}
	if st.Phase == "" {
		st.Phase = v1beta1.PhaseRunning
	}

	restartLimit := job.Spec.FailurePolicy.RestartLimit
	byNode := map[string]*nodeState{}
	var unplaced []*corev1.Pod
	for _, pod := range pods {
		name := nodefit.TargetNode(pod)
		if name == "" {
			unplaced = append(unplaced, pod)
			continue
		}
		s := byNode[name]
		if s == nil {
			s = &nodeState{}
			byNode[name] = s
		}
		s.pods = append(s.pods, pod)
	}

	var (
		active, succeeded, failed int32
		desired                   int32
		candidates                []string
		undone                    int
		deleting                  = map[*corev1.Pod]bool{}
	)
	remove := func(pod *corev1.Pod) {
		if !deleting[pod] && pod.DeletionTimestamp == nil {
			deleting[pod] = true
			p.Delete = append(p.Delete, pod)
		}
	}
	count := func(pod *corev1.Pod) {
		if deleting[pod] {
			return
		}
		switch classify(pod, restartLimit) {
		case classActive:
			active++
		case classSucceeded:
			succeeded++
		case classFailed:
			failed++
		}
	}
	checker := nodefit.NewChecker(&job.Spec.Template, nil)
	seen := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		seen[node.Name] = true
		s := byNode[node.Name]
		if s == nil || len(s.pods) == 0 {
			if fitsWith(checker, node, nil).Schedule {
				desired++
				undone++
				candidates = append(candidates, node.Name)
			}
			continue
		}
		kept := keep(s.pods)
		for _, pod := range s.pods {
			if pod != kept && classify(pod, restartLimit) == classActive {
				remove(pod) // a second pod for the node
			}
		}
		// A bound pod stays unless the node stopped matching or evicts it (NoExecute); one
		// the scheduler has not bound yet must still be schedulable there.
		fit := fitsWith(checker, node, kept.Spec.Tolerations)
		stays := fit.Continue && (kept.Spec.NodeName != "" || fit.Schedule)
		if !stays {
			if stillRunning(kept) {
				remove(kept)
			}
			continue
		}
		desired++
		switch classify(kept, restartLimit) {
		case classActive, classTerminating:
			undone++
		}
	}
	for name, s := range byNode {
		if seen[name] {
			continue
		}
		for _, pod := range s.pods { // the node is gone
			if stillRunning(pod) {
				remove(pod)
			}
		}
	}
	for _, s := range byNode {
		for _, pod := range s.pods {
			count(pod)
		}
	}
	for _, pod := range unplaced {
		count(pod)
	}
	st.Active, st.Succeeded, st.Failed, st.Desired = active, succeeded, failed, desired

	if st.Phase == v1beta1.PhaseFailed {
		// Pods a failing pass could not delete are deleted now.
		stopRunning(&p, pods, deleting)
		return p
	}
	if job.Spec.Paused {
		if st.Phase == v1beta1.PhaseRunning {
			st.Phase = v1beta1.PhasePaused
		}
		return p
	}
	if st.Phase == v1beta1.PhasePaused && !(failed > 0 && job.Spec.FailurePolicy.Type == v1beta1.FailurePolicyTypePause) {
		st.Phase = v1beta1.PhaseRunning
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonContinue, "The job continues"})
	}

	if failed > 0 {
		switch job.Spec.FailurePolicy.Type {
		case v1beta1.FailurePolicyTypePause:
			if st.Phase != v1beta1.PhasePaused {
				st.Phase = v1beta1.PhasePaused
				p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonPaused, fmt.Sprintf("Paused: %d pods failed (failurePolicy Pause)", failed)})
			}
			return p
		case v1beta1.FailurePolicyTypeContinue:
		default: // FailFast, the default, whatever the completion policy
			fail(&p, job, pods, deleting, now, ReasonFailed,
				fmt.Sprintf("failure policy is FailFast and a failed pod is found: %d pods succeeded, %d pods failed", succeeded, failed))
			return p
		}
	}
	if always && job.Spec.CompletionPolicy.ActiveDeadlineSeconds != nil {
		at := st.StartTime.Add(time.Duration(*job.Spec.CompletionPolicy.ActiveDeadlineSeconds) * time.Second)
		if !now.Before(at) {
			fail(&p, job, pods, deleting, now, ReasonDeadline,
				fmt.Sprintf("Job %s/%s was active longer than specified deadline", job.Namespace, job.Name))
			return p
		}
		p.Requeue = at.Sub(now)
	}

	if job.DeletionTimestamp == nil && len(candidates) > 0 {
		limit := parallelism(job.Spec.Parallelism, desired)
		// Pods being deleted by this plan no longer hold a slot (they were active, now they are not).
		n := min(limit-int(active), len(candidates), workers.Burst)
		if n > 0 {
			slices.Sort(candidates)
			p.Create = candidates[:n]
		}
	}
	if always && desired > 0 && undone == 0 {
		st.Phase = v1beta1.PhaseCompleted
		finish(&p, job, pods, deleting, now, v1beta1.JobComplete,
			fmt.Sprintf("Job completed, %d pods succeeded, %d pods failed", succeeded, failed))
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonCompleted,
			fmt.Sprintf("Job %s/%s is completed, %d pods succeeded, %d pods failed", job.Namespace, job.Name, succeeded, failed)})
	}
	return p
}

// keep is the pod a node keeps of several: the oldest that is not being deleted (name breaks
// ties), else the oldest.
func keep(pods []*corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	for _, pod := range pods {
		if best == nil || better(pod, best) {
			best = pod
		}
	}
	return best
}

func better(a, b *corev1.Pod) bool {
	if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
		return a.DeletionTimestamp == nil
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// stopRunning deletes the pods whose containers may still run: a finished job leaves none.
func stopRunning(p *Plan, pods []*corev1.Pod, deleting map[*corev1.Pod]bool) {
	for _, pod := range pods {
		if stillRunning(pod) && !deleting[pod] {
			deleting[pod] = true
			p.Delete = append(p.Delete, pod)
		}
	}
}

// parallelism is how many pods may be active at once: an integer, or a percentage of desired
// rounded up; unset means no limit.
func parallelism(v *intstr.IntOrString, desired int32) int {
	if v == nil {
		return math.MaxInt32
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(desired), true)
	if err != nil || n < 0 {
		// The webhook refuses such a value; one that got in anyway does not stop the job.
		return math.MaxInt32
	}
	return n
}

// fail finishes the job as failed: its active pods are deleted and no new pod is made.
func fail(p *Plan, job *v1beta1.BroadcastJob, pods []*corev1.Pod, deleting map[*corev1.Pod]bool, now time.Time, reason, message string) {
	p.Status.Phase = v1beta1.PhaseFailed
	p.Status.Active = 0
	finish(p, job, pods, deleting, now, v1beta1.JobFailed, message)
	p.Events = append(p.Events, Event{corev1.EventTypeWarning, reason, message})
}

// finish sets the condition and completion time, deletes the pods still running (active ones,
// and failed ones over the restart limit that have not stopped) and requeues for the TTL.
func finish(p *Plan, job *v1beta1.BroadcastJob, pods []*corev1.Pod, deleting map[*corev1.Pod]bool, now time.Time, t v1beta1.JobConditionType, message string) {
	at := metav1.Time{Time: now}
	p.Status.Conditions = append(p.Status.Conditions, v1beta1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, LastProbeTime: at, LastTransitionTime: at, Reason: string(t), Message: message,
	})
	p.Status.CompletionTime = &at
	p.Create = nil
	stopRunning(p, pods, deleting)
	p.Requeue = 0
	if ttl := job.Spec.CompletionPolicy.TTLSecondsAfterFinished; ttl != nil {
		p.Requeue = time.Duration(*ttl) * time.Second
	}
}
