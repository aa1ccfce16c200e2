package describe

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// describeEphemeralJob shows an EphemeralJob: its selector, limits and
// containers, the counts, phase and conditions, and each matched pod with
// the state of the containers the job added to it.
func describeEphemeralJob(ctx context.Context, o *Options, name string) (string, error) {
	job, err := o.Kruise.AppsV1alpha1().EphemeralJobs(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", notFound("ephemeraljob", "ejob", o.Namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("reading ephemeraljob %s/%s: %w", o.Namespace, name, err)
	}
	pods, podsErr := o.matchedPods(ctx, job)
	p := newPage(o.now())
	p.meta(job.ObjectMeta)
	spec := job.Spec
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil {
		selector = s.String()
	}
	p.line(0, "Selector:\t%s", selector)
	replicas := "every matched pod"
	if spec.Replicas != nil {
		replicas = fmt.Sprint(*spec.Replicas)
	}
	p.line(0, "Replicas:\t%s", replicas)
	p.line(0, "Parallelism:\t%d", deref(spec.Parallelism, 1))
	p.line(0, "Paused:\t%t", spec.Paused)
	p.line(0, "Active Deadline:\t%s", seconds(spec.ActiveDeadlineSeconds, "none"))
	ttl := "1800s (unset)"
	if spec.TTLSecondsAfterFinished != nil {
		ttl = fmt.Sprintf("%ds", *spec.TTLSecondsAfterFinished)
	}
	p.line(0, "TTL After Finished:\t%s", ttl)
	p.line(0, "Ephemeral Containers:")
	for _, c := range spec.Template.EphemeralContainers {
		target := ""
		if c.TargetContainerName != "" {
			target = " (target " + c.TargetContainerName + ")"
		}
		p.line(1, "%s:\t%s%s", c.Name, c.Image, target)
	}
	st := job.Status
	p.line(0, "Phase:\t%s", orNone(string(st.Phase)))
	if st.StartTime != nil {
		p.line(0, "Started:\t%s", timestamp(*st.StartTime))
	}
	if st.CompletionTime != nil {
		p.line(0, "Completed:\t%s", timestamp(*st.CompletionTime))
	}
	p.line(0, "Pods Status:\t%d matched | %d waiting | %d running | %d succeeded | %d failed", st.Matches, st.Waiting, st.Running, st.Succeeded, st.Failed)
	rows, counts := p.ephemeralRows(job.UID, pods)
	switch {
	case podsErr != nil:
		p.line(0, "Container States:\t<cannot list the pods: %v>", podsErr)
	case len(rows) == 0:
		p.line(0, "Container States:\t<no pod matched>")
	default:
		p.line(0, "Container States:\t%s", stateCounts(counts))
	}
	if len(st.Conditions) == 0 {
		p.line(0, "Conditions:\t<none>")
	} else {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus\tReason\tAge\tMessage")
		p.line(1, "----\t------\t------\t---\t-------")
		for _, c := range st.Conditions {
			p.line(1, "%s\t%s\t%s\t%s\t%s", c.Type, c.Status, orNone(c.Reason), p.age(c.LastTransitionTime), c.Message)
		}
	}
	ephemeralTable(p, rows)
	o.events(ctx, p, job.Namespace, "EphemeralJob", job.Name, job.UID)
	return p.String(), nil
}

// matchedPods are the namespace's pods the job's selector matches.
func (o *Options) matchedPods(ctx context.Context, job *appsv1alpha1.EphemeralJob) ([]corev1.Pod, error) {
	if job.Spec.Selector == nil {
		return nil, nil
	}
	s, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("the selector is invalid: %w", err)
	}
	list, err := o.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ephemeralRow is one of the job's containers in one pod.
type ephemeralRow struct {
	pod, node, container, state, detail string
	rank                                int
}

// ephemeralRows are, per matched pod, each container the job added (the
// ones whose KRUISE_EJOB_ID is the job's UID) with its state, or one "Not
// Added" row for a pod the job has not reached; in the table's order, with
// how many are in each state.
func (p *page) ephemeralRows(uid types.UID, pods []corev1.Pod) ([]ephemeralRow, map[string]int) {
	var rows []ephemeralRow
	counts := map[string]int{}
	for _, pod := range pods {
		added := false
		for _, c := range pod.Spec.EphemeralContainers {
			if !ownedEphemeral(c, uid) {
				continue
			}
			added = true
			r := p.ephemeralState(pod, c.Name)
			counts[r.state]++
			rows = append(rows, r)
		}
		if !added {
			counts["Not Added"]++
			rows = append(rows, ephemeralRow{pod: pod.Name, node: orNone(pod.Spec.NodeName), container: "-", state: "Not Added", detail: "pod " + orDefault(string(pod.Status.Phase), "Pending"), rank: 3})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].rank != rows[j].rank {
			return rows[i].rank < rows[j].rank
		}
		if rows[i].pod != rows[j].pod {
			return rows[i].pod < rows[j].pod
		}
		return rows[i].container < rows[j].container
	})
	return rows, counts
}

// ephemeralTable writes the first maxRows rows (failed first, as the node
// table of a BroadcastJob) and how many were left out.
func ephemeralTable(p *page, rows []ephemeralRow) {
	if len(rows) == 0 {
		return
	}
	p.line(0, "Pods:")
	p.line(1, "Pod\tNode\tContainer\tState\tDetail")
	p.line(1, "---\t----\t---------\t-----\t------")
	for i, r := range rows {
		if i == maxRows {
			p.line(1, "... %d more rows, not shown", len(rows)-maxRows)
			break
		}
		p.line(1, "%s\t%s\t%s\t%s\t%s", r.pod, r.node, r.container, r.state, orNone(r.detail))
	}
}

// ownedEphemeral says whether the job added the container: the job marks
// its containers with its UID in KRUISE_EJOB_ID.
func ownedEphemeral(c corev1.EphemeralContainer, uid types.UID) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == appsv1alpha1.EphemeralContainerEnvKey && e.Value == string(uid)
	})
}

// ephemeralState is the container's state in the pod's status, ranked as
// the BroadcastJob's pods are: failed, then not finished, then succeeded.
func (p *page) ephemeralState(pod corev1.Pod, name string) ephemeralRow {
	r := ephemeralRow{pod: pod.Name, node: orNone(pod.Spec.NodeName), container: name, state: "Waiting", detail: "not started", rank: 1}
	i := slices.IndexFunc(pod.Status.EphemeralContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == name })
	if i < 0 {
		return r
	}
	s := pod.Status.EphemeralContainerStatuses[i].State
	switch {
	case s.Terminated != nil && s.Terminated.ExitCode == 0:
		r.state, r.rank = "Succeeded", 2
		r.detail = fmt.Sprintf("exit 0, %s ago", p.age(s.Terminated.FinishedAt))
	case s.Terminated != nil:
		r.state, r.rank = "Failed", 0
		r.detail = strings.TrimSpace(fmt.Sprintf("%s (exit %d) %s", orDefault(s.Terminated.Reason, "Error"), s.Terminated.ExitCode, s.Terminated.Message))
	case s.Running != nil:
		r.state = "Running"
		r.detail = "for " + p.age(s.Running.StartedAt)
	case s.Waiting != nil:
		r.detail = strings.TrimSpace(orDefault(s.Waiting.Reason, "not started") + " " + s.Waiting.Message)
	}
	return r
}
