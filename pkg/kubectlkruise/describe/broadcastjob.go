package describe

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// describeBroadcastJob shows a BroadcastJob: its policies, the counts,
// phase and conditions, and its pods node by node (the ones that need a
// look first, at most maxRows of them).
func describeBroadcastJob(ctx context.Context, o *Options, name string) (string, error) {
	job, err := o.Kruise.AppsV1beta1().BroadcastJobs(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", notFound("broadcastjob", "bcj", o.Namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("reading broadcastjob %s/%s: %w", o.Namespace, name, err)
	}
	pods, podsErr := o.broadcastJobPods(ctx, job)
	p := newPage(o.now())
	p.meta(job.ObjectMeta)
	spec := job.Spec
	p.line(0, "Parallelism:\t%s", intOrString(spec.Parallelism, "unlimited"))
	completion := orDefault(string(spec.CompletionPolicy.Type), string(appsv1beta1.Always))
	p.line(0, "Completion Policy:\t%s", completion)
	if spec.CompletionPolicy.ActiveDeadlineSeconds != nil {
		p.line(1, "Active Deadline:\t%ds", *spec.CompletionPolicy.ActiveDeadlineSeconds)
	}
	if spec.CompletionPolicy.TTLSecondsAfterFinished != nil {
		p.line(1, "TTL After Finished:\t%ds", *spec.CompletionPolicy.TTLSecondsAfterFinished)
	}
	p.line(0, "Failure Policy:\t%s", orDefault(string(spec.FailurePolicy.Type), string(appsv1beta1.FailurePolicyTypeFailFast)))
	p.line(1, "Restart Limit:\t%d", spec.FailurePolicy.RestartLimit)
	p.line(0, "Paused:\t%t", spec.Paused)
	podTemplate(p, spec.Template)
	st := job.Status
	p.line(0, "Phase:\t%s", orNone(string(st.Phase)))
	if st.StartTime != nil {
		p.line(0, "Started:\t%s", timestamp(*st.StartTime))
	}
	if st.CompletionTime != nil {
		p.line(0, "Completed:\t%s", timestamp(*st.CompletionTime))
	}
	p.line(0, "Pods Status:\t%d desired | %d active | %d succeeded | %d failed", st.Desired, st.Active, st.Succeeded, st.Failed)
	// The pods' own states, as the job counts them, beside its status.
	rows, counts := p.nodePodRows(pods, spec.FailurePolicy.RestartLimit)
	switch {
	case podsErr != nil:
		p.line(0, "Pod States:\t<cannot list the pods: %v>", podsErr)
	case len(rows) == 0:
		p.line(0, "Pod States:\t<no pods>")
	default:
		p.line(0, "Pod States:\t%s", stateCounts(counts))
	}
	jobConditions(p, st.Conditions)
	nodeTable(p, rows, job.UID)
	o.events(ctx, p, job.Namespace, "BroadcastJob", job.Name, job.UID)
	return p.String(), nil
}

// broadcastJobPods are the pods the job controls, found by its UID label.
func (o *Options) broadcastJobPods(ctx context.Context, job *appsv1beta1.BroadcastJob) ([]corev1.Pod, error) {
	selector := labels.Set{appsv1beta1.BroadcastJobControllerUIDLabel: string(job.UID)}.AsSelector().String()
	list, err := o.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	for _, pod := range list.Items {
		if controlledBy(pod.OwnerReferences, job.UID) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

func jobConditions(p *page, conditions []appsv1beta1.JobCondition) {
	if len(conditions) == 0 {
		p.line(0, "Conditions:\t<none>")
		return
	}
	p.line(0, "Conditions:")
	p.line(1, "Type\tStatus\tReason\tAge\tMessage")
	p.line(1, "----\t------\t------\t---\t-------")
	for _, c := range conditions {
		p.line(1, "%s\t%s\t%s\t%s\t%s", c.Type, c.Status, orNone(c.Reason), p.age(c.LastTransitionTime), c.Message)
	}
}

// podTemplate writes the template's containers and images, and where the
// pods may run when the template says so.
func podTemplate(p *page, t corev1.PodTemplateSpec) {
	p.line(0, "Pod Template:")
	p.line(1, "Restart Policy:\t%s", orNone(string(t.Spec.RestartPolicy)))
	if len(t.Spec.NodeSelector) > 0 {
		p.line(1, "Node Selector:\t%s", labels.Set(t.Spec.NodeSelector).String())
	}
	if len(t.Spec.Tolerations) > 0 {
		p.line(1, "Tolerations:\t%d", len(t.Spec.Tolerations))
	}
	for _, c := range t.Spec.InitContainers {
		p.line(1, "Init Container %s:\t%s", c.Name, c.Image)
	}
	for _, c := range t.Spec.Containers {
		p.line(1, "Container %s:\t%s", c.Name, c.Image)
	}
}

// maxRows bounds the per-node and per-pod tables: a job over thousands of
// nodes is summarised by counts, and the rows shown are the ones that need
// a look (failed, then not finished) before the succeeded ones.
const maxRows = 20

// nodePod is one pod of a BroadcastJob as a row of the node table.
type nodePod struct {
	node, pod, state, restarts, age, message string
	// rank orders the rows: failed first, then active, then succeeded.
	rank int
}

// nodePodRows are the pods as rows of the node table, in its order, and
// how many are in each state.
func (p *page) nodePodRows(pods []corev1.Pod, restartLimit int32) ([]nodePod, map[string]int) {
	rows := make([]nodePod, 0, len(pods))
	counts := map[string]int{}
	for _, pod := range pods {
		r := p.nodePodRow(pod, restartLimit)
		counts[r.state]++
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].rank != rows[j].rank {
			return rows[i].rank < rows[j].rank
		}
		if rows[i].node != rows[j].node {
			return rows[i].node < rows[j].node
		}
		return rows[i].pod < rows[j].pod
	})
	return rows, counts
}

// nodeTable writes the first maxRows rows and says how to list the rest.
func nodeTable(p *page, rows []nodePod, uid types.UID) {
	if len(rows) == 0 {
		return
	}
	p.line(0, "Nodes:")
	p.line(1, "Node\tPod\tState\tRestarts\tAge\tMessage")
	p.line(1, "----\t---\t-----\t--------\t---\t-------")
	for i, r := range rows {
		if i == maxRows {
			p.line(1, "... %d more pods, not shown (kubectl get pods -l %s=%s -o wide lists them all)", len(rows)-maxRows, appsv1beta1.BroadcastJobControllerUIDLabel, uid)
			break
		}
		p.line(1, "%s\t%s\t%s\t%s\t%s\t%s", r.node, r.pod, r.state, r.restarts, r.age, orNone(r.message))
	}
}

// nodePodRow reads one pod: its node (from the node affinity the
// controller pins it with while it is not scheduled yet), its state as the
// job counts it (an OnFailure pod past the restart limit counts failed),
// its restarts and why it failed.
func (p *page) nodePodRow(pod corev1.Pod, restartLimit int32) nodePod {
	r := nodePod{node: podNode(pod), pod: pod.Name, age: p.age(pod.CreationTimestamp)}
	restarts := int32(0)
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarts += s.RestartCount
	}
	r.restarts = fmt.Sprint(restarts)
	switch {
	case pod.Status.Phase == corev1.PodFailed:
		r.state, r.rank = "Failed", 0
	case pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && restarts > restartLimit && pod.Status.Phase != corev1.PodSucceeded:
		r.state, r.rank = "Failed", 0
		r.restarts = fmt.Sprintf("%d (limit %d)", restarts, restartLimit)
	case pod.Status.Phase == corev1.PodSucceeded:
		r.state, r.rank = "Succeeded", 2
	default:
		r.state, r.rank = orDefault(string(pod.Status.Phase), string(corev1.PodPending)), 1
	}
	if pod.DeletionTimestamp != nil {
		r.state += " (terminating)"
	}
	r.message = podProblem(pod)
	return r
}

// podNode is the node the pod runs on or is pinned to.
func podNode(pod corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, req := range term.MatchFields {
				if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
					return req.Values[0]
				}
			}
		}
	}
	return "<none>"
}

// podProblem is the pod's most telling trouble: the first container that
// terminated badly or waits with a reason, else the pod's own reason.
func podProblem(pod corev1.Pod) string {
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, s := range statuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("%s: %s (exit %d)", s.Name, orDefault(t.Reason, "Error"), t.ExitCode)
		}
		if t := s.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 && s.State.Running == nil {
			return fmt.Sprintf("%s: %s (exit %d)", s.Name, orDefault(t.Reason, "Error"), t.ExitCode)
		}
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("%s: %s", s.Name, w.Reason)
		}
	}
	if pod.Status.Reason != "" {
		return strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// stateCounts is "2 Failed, 1 Running, 5 Succeeded": the states in the
// order the table shows them.
func stateCounts(counts map[string]int) string {
	states := make([]string, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool {
		if a, b := stateRank(states[i]), stateRank(states[j]); a != b {
			return a < b
		}
		return states[i] < states[j]
	})
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	return strings.Join(parts, ", ")
}

func stateRank(state string) int {
	switch {
	case strings.HasPrefix(state, "Failed"):
		return 0
	case strings.HasPrefix(state, "Succeeded"):
		return 2
	case strings.HasPrefix(state, "Not Added"):
		return 3
	}
	return 1
}
