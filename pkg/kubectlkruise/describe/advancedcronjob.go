package describe

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// childJob is one job an AdvancedCronJob created, whatever its kind.
type childJob struct {
	meta  metav1.ObjectMeta
	state string
}

// describeAdvancedCronJob shows an AdvancedCronJob: its schedule and
// policies, what its template creates, and its jobs, newest first (the
// scheduled runs and those created by hand).
func describeAdvancedCronJob(ctx context.Context, o *Options, name string) (string, error) {
	acj, err := o.Kruise.AppsV1beta1().AdvancedCronJobs(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", notFound("advancedcronjob", "acj", o.Namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("reading advancedcronjob %s/%s: %w", o.Namespace, name, err)
	}
	kind := cronjobs.KindOf(&acj.Spec)
	children, childrenErr := o.childJobs(ctx, acj, kind)
	p := newPage(o.now())
	p.meta(acj.ObjectMeta)
	spec := acj.Spec
	p.line(0, "Schedule:\t%s", spec.Schedule)
	tz := "<the controller's local time zone>"
	if spec.TimeZone != nil {
		tz = *spec.TimeZone
	}
	p.line(0, "Time Zone:\t%s", tz)
	p.line(0, "Concurrency Policy:\t%s", concurrencyPolicy(&spec))
	p.line(0, "Paused:\t%t", spec.Paused != nil && *spec.Paused)
	p.line(0, "Starting Deadline:\t%s", seconds(spec.StartingDeadlineSeconds, "none"))
	p.line(0, "Successful Jobs History Limit:\t%s", limit(spec.SuccessfulJobsHistoryLimit))
	p.line(0, "Failed Jobs History Limit:\t%s", limit(spec.FailedJobsHistoryLimit))
	cronTemplate(p, spec.Template, kind)
	if t := acj.Status.LastScheduleTime; t != nil {
		p.line(0, "Last Schedule Time:\t%s (%s ago)", timestamp(*t), p.age(*t))
	} else {
		p.line(0, "Last Schedule Time:\t<none>")
	}
	p.line(0, "Next Run:\t%s", p.nextRun(&spec))
	var active []string
	for _, ref := range acj.Status.Active {
		active = append(active, ref.Name)
	}
	p.line(0, "Active Jobs:\t%s", orNone(strings.Join(active, ", ")))
	switch {
	case childrenErr != nil:
		p.line(0, "Job States:\t<cannot list the jobs: %v>", childrenErr)
	case len(children) == 0:
		p.line(0, "Job States:\t<no jobs>")
	default:
		counts := map[string]int{}
		for _, c := range children {
			counts[c.state]++
		}
		p.line(0, "Job States:\t%s", stateCounts(counts))
		p.childJobTable(children)
	}
	o.events(ctx, p, acj.Namespace, appsv1beta1.AdvancedCronJobKind, acj.Name, acj.UID)
	return p.String(), nil
}

// concurrencyPolicy is the policy in force, marked when it is the default
// an unset one stands for.
func concurrencyPolicy(spec *appsv1beta1.AdvancedCronJobSpec) string {
	policy := string(cronjobs.ConcurrencyOf(spec))
	if spec.ConcurrencyPolicy == "" {
		policy += " (unset)"
	}
	return policy
}

// nextRun is when the schedule fires next after now, read as the
// controller reads it; a schedule without a time zone is read in UTC, the
// zone of the controller's image.
func (p *page) nextRun(spec *appsv1beta1.AdvancedCronJobSpec) string {
	if spec.Paused != nil && *spec.Paused {
		return "<none: paused>"
	}
	tz := spec.TimeZone
	if tz == nil && !cronjobs.HasTZPrefix(spec.Schedule) {
		tz = ptr.To("UTC")
	}
	sched, err := cronjobs.ParseSchedule(spec.Schedule, tz)
	if err != nil {
		return fmt.Sprintf("<none: %v>", err)
	}
	next := sched.Next(p.now)
	if next.IsZero() {
		return "<never>"
	}
	// In the schedule's own zone, where "0 2 * * *" reads as 02:00.
	if spec, ok := sched.(*cron.SpecSchedule); ok && spec.Location != nil {
		next = next.In(spec.Location)
	}
	return fmt.Sprintf("%s (in %s)", next.Format(time.RFC1123Z), duration.HumanDuration(next.Sub(p.now)))
}

func limit(v *int32) string {
	if v == nil {
		return "unlimited"
	}
	return fmt.Sprint(*v)
}

// cronTemplate summarises the template: its kind, its metadata, and what
// each run does.
func cronTemplate(p *page, t appsv1beta1.CronJobTemplate, kind appsv1beta1.TemplateKind) {
	if kind == "" {
		p.line(0, "Template:\t<none>")
		return
	}
	p.line(0, "Template:\t%s", kind)
	var meta metav1.ObjectMeta
	switch kind {
	case appsv1beta1.JobTemplate:
		meta = t.JobTemplate.ObjectMeta
	case appsv1beta1.BroadcastJobTemplate:
		meta = t.BroadcastJobTemplate.ObjectMeta
	default:
		meta = t.ImageListPullJobTemplate.ObjectMeta
	}
	if len(meta.Labels) > 0 {
		p.line(1, "Labels:\t%s", keyValueList(meta.Labels))
	}
	if len(meta.Annotations) > 0 {
		p.line(1, "Annotations:\t%s", keyValueList(meta.Annotations))
	}
	switch kind {
	case appsv1beta1.JobTemplate:
		s := t.JobTemplate.Spec
		p.line(1, "Completions:\t%s", optional(s.Completions))
		p.line(1, "Parallelism:\t%s", optional(s.Parallelism))
		p.line(1, "Backoff Limit:\t%s", optional(s.BackoffLimit))
		templateContainers(p, s.Template.Spec)
	case appsv1beta1.BroadcastJobTemplate:
		s := t.BroadcastJobTemplate.Spec
		p.line(1, "Parallelism:\t%s", intOrString(s.Parallelism, "unlimited"))
		p.line(1, "Completion Policy:\t%s", orDefault(string(s.CompletionPolicy.Type), string(appsv1beta1.Always)))
		p.line(1, "Failure Policy:\t%s", orDefault(string(s.FailurePolicy.Type), string(appsv1beta1.FailurePolicyTypeFailFast)))
		templateContainers(p, s.Template.Spec)
	default:
		s := t.ImageListPullJobTemplate.Spec
		p.line(1, "Images:\t%s", strings.Join(s.Images, ", "))
		p.line(1, "Nodes:\t%s", nodeSelection(s.ImagePullJobTemplate))
	}
}

func templateContainers(p *page, spec corev1.PodSpec) {
	for _, c := range spec.Containers {
		p.line(1, "Container %s:\t%s", c.Name, c.Image)
	}
}

func optional(v *int32) string {
	if v == nil {
		return "<unset>"
	}
	return fmt.Sprint(*v)
}

// keyValueList is a map as k=v pairs on one line, sorted.
func keyValueList(m map[string]string) string {
	pairs := make([]string, 0, len(m))
	for k, v := range m {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ", ")
}

// childJobs are the jobs of the template's kind that the AdvancedCronJob
// controls (its owner reference with controller set, as a run's job and
// one created by `create job --from` have).
func (o *Options) childJobs(ctx context.Context, acj *appsv1beta1.AdvancedCronJob, kind appsv1beta1.TemplateKind) ([]childJob, error) {
	var children []childJob
	add := func(meta metav1.ObjectMeta, state string) {
		if controlledBy(meta.OwnerReferences, acj.UID) {
			children = append(children, childJob{meta: meta, state: state})
		}
	}
	switch kind {
	case appsv1beta1.JobTemplate:
		list, err := o.Kube.BatchV1().Jobs(acj.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, j := range list.Items {
			add(j.ObjectMeta, batchJobState(j))
		}
	case appsv1beta1.BroadcastJobTemplate:
		list, err := o.Kruise.AppsV1beta1().BroadcastJobs(acj.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, j := range list.Items {
			add(j.ObjectMeta, broadcastJobState(j))
		}
	case appsv1beta1.ImageListPullJobTemplate:
		list, err := o.Kruise.AppsV1beta1().ImageListPullJobs(acj.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, j := range list.Items {
			add(j.ObjectMeta, imageListPullJobState(j))
		}
	}
	return children, nil
}

// batchJobState is a Job's state as kubectl get jobs words it.
func batchJobState(j batchv1.Job) string {
	if s := finished(&j); s != "" {
		return s
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return "Suspended"
	}
	return "Running"
}

func broadcastJobState(j appsv1beta1.BroadcastJob) string {
	if s := finished(&j); s != "" {
		return s
	}
	if j.Status.Phase == appsv1beta1.PhasePaused || j.Spec.Paused {
		return "Paused"
	}
	return "Running"
}

func imageListPullJobState(j appsv1beta1.ImageListPullJob) string {
	return orDefault(finished(&j), "Running")
}

// finished is "Complete" or "Failed" for a job the AdvancedCronJob
// controller counts as finished (so as its history limits count it), ""
// for an active one.
func finished(obj cronjobs.Object) string {
	switch cronjobs.StateOf(obj) {
	case cronjobs.Succeeded:
		return "Complete"
	case cronjobs.Failed:
		return "Failed"
	}
	return ""
}

// childJobTable lists the jobs, newest first, with the run each belongs
// to: its scheduled time, or "manual" for one created by hand.
func (p *page) childJobTable(children []childJob) {
	sort.Slice(children, func(i, j int) bool {
		a, b := children[i].meta.CreationTimestamp, children[j].meta.CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return children[i].meta.Name > children[j].meta.Name
	})
	p.line(0, "Jobs:")
	p.line(1, "Name\tRun\tState\tAge")
	p.line(1, "----\t---\t-----\t---")
	for i, c := range children {
		if i == maxRows {
			p.line(1, "... %d older jobs, not shown", len(children)-maxRows)
			break
		}
		p.line(1, "%s\t%s\t%s\t%s", c.meta.Name, runOf(c.meta), c.state, p.age(c.meta.CreationTimestamp))
	}
}

// runOf is the scheduled time a job was created for, or "manual".
func runOf(meta metav1.ObjectMeta) string {
	if v, ok := meta.Annotations[appsv1beta1.ScheduledAtAnnotation]; ok {
		return v
	}
	if meta.Annotations[cliutil.ManualRunAnnotation] == cliutil.ManualRunValue {
		return "manual"
	}
	return "-"
}
