//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/controller/sidecarterminator"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// jobTimeout bounds each wait of one Job (to Complete, to its sidecar's end, to its pod's
// removal); far above the seconds each takes.
const jobTimeout = 2 * time.Minute

// The pods' programs, the same in every arm.
var (
	mainCommand    = []string{"sh", "-c", "sleep 2; exit 0"}
	sidecarCommand = []string{"sh", "-c", `trap "exit 0" TERM; while true; do sleep 0.2; done`}
)

type jobArm string

const (
	armPhase  jobArm = "kruise, phase"
	armCRRMec jobArm = "kruise, crr"
	armNative jobArm = "native sidecar"
	armNone   jobArm = "no sidecar"
)

// slug names the Jobs of an arm.
var slug = map[jobArm]string{armPhase: "phase", armCRRMec: "crr", armNative: "native", armNone: "none"}

// jobSample is one Job. Every duration is measured from the main container's exit as the runtime
// recorded it (CRI FinishedAt); the others are client receipt times of watch events.
type jobSample struct {
	// complete: a Job watch event shows Complete=True. The benchmark's metric.
	complete time.Duration
	// mainSeen: the first pod status showing the main container terminated (the kubelet noticed).
	mainSeen time.Duration
	// podTerminal: the first pod status with phase Succeeded or Failed.
	podTerminal time.Duration
	// sidecarExit: the sidecar's own exit (CRI FinishedAt); zero in the no-sidecar arm.
	sidecarExit time.Duration
}

// TestSidecarJobLatency measures, per Job, the last main container's exit → the Job's Complete
// condition, for a Job with a kruise-terminated sidecar (phase mechanism, then crr mechanism), a
// native sidecar (restartable init container) and no sidecar at all.
func TestSidecarJobLatency(t *testing.T) {
	ctx := context.Background()
	b := connect(ctx, t, "bench-sidecar", "bench-sidecar")

	// The arms need the controller's mechanism set: phase first, crr last. Whatever the
	// controller ran with is put back when the test ends, however it ends.
	ctl := b.controllerFlags(t, ctx)
	ctl.setSidecarTermination(t, ctx, "")

	samples := map[jobArm][]jobSample{}
	run := func(a jobArm, name string, timed bool) {
		t.Helper()
		s, err := b.job(ctx, a, name)
		if err != nil {
			t.Fatalf("Job %s (%s): %v", name, a, err)
		}
		tag := fmt.Sprintf("%-7s", name)
		if !timed {
			tag = "warm-up " + name
		}
		t.Logf("%s %-14s complete %6.3fs  main-seen %6.3fs  pod-terminal %6.3fs  sidecar-exit %s",
			tag, a, s.complete.Seconds(), s.mainSeen.Seconds(), s.podTerminal.Seconds(), sidecarText(a, s))
		if timed {
			samples[a] = append(samples[a], s)
		}
	}

	// One untimed Job per arm warms the image, the kubelet's, the Job controller's and kruise's
	// caches; then the arms take turns, one Job each per round, the first arm rotating.
	rr := []jobArm{armPhase, armNative, armNone}
	for _, a := range rr {
		run(a, "warmup-"+slug[a], false)
	}
	for i := 0; i < iterations; i++ {
		for k := range rr {
			a := rr[(i+k)%len(rr)]
			run(a, fmt.Sprintf("%s-%02d", slug[a], i), true)
		}
	}

	// What is measured is reported at once: a later arm that fails loses none of it.
	reportJobs(t, samples, rr)

	// The crr mechanism: switch the controller, measure (the cleanup switches it back).
	ctl.setSidecarTermination(t, ctx, "crr")
	run(armCRRMec, "warmup-"+slug[armCRRMec], false)
	for i := 0; i < iterations; i++ {
		run(armCRRMec, fmt.Sprintf("%s-%02d", slug[armCRRMec], i), true)
	}

	reportJobs(t, samples, []jobArm{armPhase, armCRRMec, armNative, armNone})
}

func sidecarText(a jobArm, s jobSample) string {
	if a == armNone {
		return "-"
	}
	return fmt.Sprintf("%6.3fs", s.sidecarExit.Seconds())
}

// jobSpec is the arm's Job: restartPolicy Never, backoffLimit 0, the same main everywhere, and
// the same sidecar program as a marked regular container (kruise arms) or a restartable init
// container (native arm).
func jobSpec(a jobArm, name, ns string) *batchv1.Job {
	sidecar := corev1.Container{Name: "sidecar", Image: image, Command: sidecarCommand}
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](graceSeconds),
		Containers:                    []corev1.Container{{Name: "main", Image: image, Command: mainCommand}},
	}
	switch a {
	case armPhase, armCRRMec:
		sidecar.Env = []corev1.EnvVar{{Name: sidecarterminator.EnvTerminateSidecar, Value: "true"}}
		pod.Containers = append(pod.Containers, sidecar)
	case armNative:
		sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		pod.InitContainers = []corev1.Container{sidecar}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{Spec: pod},
		},
	}
}

// job runs one Job of arm a to completion and returns its timings; the Job is deleted and its
// pod gone before it returns.
func (b *env) job(ctx context.Context, a jobArm, name string) (jobSample, error) {
	// Both watches start before the Job exists, so they see every event of it and its pod.
	jobs, err := b.client.BatchV1().Jobs(b.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return jobSample{}, err
	}
	defer jobs.Stop()
	pods, err := b.client.CoreV1().Pods(b.ns).Watch(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{batchv1.JobNameLabel: name}.String(),
	})
	if err != nil {
		return jobSample{}, err
	}
	defer pods.Stop()
	if _, err := b.client.BatchV1().Jobs(b.ns).Create(ctx, jobSpec(a, name, b.ns), metav1.CreateOptions{}); err != nil {
		return jobSample{}, err
	}
	defer b.deleteJob(name)

	var (
		pod                               *corev1.Pod
		completeAt, mainSeenAt, podTermAt time.Time
		deadline                          = time.NewTimer(jobTimeout)
		jobEvents, podEvents              = jobs.ResultChan(), pods.ResultChan()
		sidecarsDone                      = a == armNone
		describe                          = func() string { return describePod(pod) }
		notePod                           = func(p *corev1.Pod, now time.Time) {
			pod = p
			if mainSeenAt.IsZero() && terminated(p.Status.ContainerStatuses, "main") {
				mainSeenAt = now
			}
			if podTermAt.IsZero() && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
				podTermAt = now
			}
			if !sidecarsDone {
				sidecarsDone = terminated(p.Status.ContainerStatuses, "sidecar") || terminated(p.Status.InitContainerStatuses, "sidecar")
			}
		}
	)
	defer deadline.Stop()
	// Until Complete, then until the sidecar has ended too (the pod is left alone until then, so
	// its containers, and the runtime's record of them, stay).
	for completeAt.IsZero() || !sidecarsDone {
		select {
		case ev, ok := <-jobEvents:
			if !ok {
				return jobSample{}, fmt.Errorf("Job watch closed before Complete; pod: %s", describe())
			}
			now := time.Now()
			j, isJob := ev.Object.(*batchv1.Job)
			if !isJob {
				continue
			}
			if cond(j, batchv1.JobFailed) {
				return jobSample{}, fmt.Errorf("Job failed: %s; pod: %s", condMessage(j, batchv1.JobFailed), describe())
			}
			if completeAt.IsZero() && cond(j, batchv1.JobComplete) {
				completeAt = now
			}
		case ev, ok := <-podEvents:
			if !ok {
				return jobSample{}, fmt.Errorf("pod watch closed; pod: %s", describe())
			}
			now := time.Now()
			if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted {
				notePod(p, now)
			}
		case <-deadline.C:
			return jobSample{}, fmt.Errorf("not done after %s (Complete seen: %t, sidecar ended: %t); pod: %s",
				jobTimeout, !completeAt.IsZero(), sidecarsDone, describe())
		}
	}
	if pod == nil {
		return jobSample{}, fmt.Errorf("Job completed but no pod event was seen")
	}

	// The outcome each arm must have.
	if pod.Status.Phase != corev1.PodSucceeded {
		return jobSample{}, fmt.Errorf("pod %s ended %s, want Succeeded: %s", pod.Name, pod.Status.Phase, describe())
	}
	switch a {
	case armPhase:
		if !podCond(pod, sidecarterminator.ConditionSidecarTerminated) {
			return jobSample{}, fmt.Errorf("pod %s has no SidecarTerminated=True condition: %s", pod.Name, describe())
		}
	case armCRRMec:
		// The kubelet, not kruise, decided this phase: a CRR stopped the sidecar.
		crrName := "sidecar-termination-" + string(pod.UID)
		if _, err := b.kruise.AppsV1alpha1().ContainerRecreateRequests(b.ns).Get(ctx, crrName, metav1.GetOptions{}); err != nil {
			return jobSample{}, fmt.Errorf("CRR %s of pod %s: %w", crrName, pod.Name, err)
		}
		if podCond(pod, sidecarterminator.ConditionSidecarTerminated) {
			return jobSample{}, fmt.Errorf("pod %s has SidecarTerminated=True under the crr mechanism: %s", pod.Name, describe())
		}
	}

	// The main's (and sidecar's) exit as the runtime recorded it, in nanoseconds; the pod still
	// exists, so its exited containers are still there.
	ctrs, err := b.rt.PodContainers(ctx, string(pod.UID))
	if err != nil {
		return jobSample{}, err
	}
	mainExit, err := finishedAt(ctrs, "main")
	if err != nil {
		return jobSample{}, err
	}
	s := jobSample{
		complete:    completeAt.Sub(mainExit),
		mainSeen:    mainSeenAt.Sub(mainExit),
		podTerminal: podTermAt.Sub(mainExit),
	}
	if a != armNone {
		sidecarExit, err := finishedAt(ctrs, "sidecar")
		if err != nil {
			return jobSample{}, err
		}
		s.sidecarExit = sidecarExit.Sub(mainExit)
	}
	if s.complete <= 0 {
		return jobSample{}, fmt.Errorf("Complete seen %s before the main's recorded exit", s.complete)
	}
	return s, nil
}

// finishedAt is when the newest instance of the named container exited, from the runtime.
func finishedAt(ctrs []cri.Container, name string) (time.Time, error) {
	c, ok := cri.Newest(ctrs, name)
	switch {
	case !ok:
		return time.Time{}, fmt.Errorf("container %q is not in the runtime any more", name)
	case !c.StatusKnown || c.State != cri.ContainerExited || c.FinishedAt.IsZero():
		return time.Time{}, fmt.Errorf("container %q (%s) has no exit time in the runtime: state %s", name, c.ID, c.State)
	}
	return c.FinishedAt, nil
}

// deleteJob deletes the Job (Background propagation: the garbage collector deletes its pod) and
// waits, by watch, until its pods are gone, so the next Job runs alone.
func (b *env) deleteJob(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	defer cancel()
	sel := labels.Set{batchv1.JobNameLabel: name}.String()
	err := b.client.BatchV1().Jobs(b.ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	for ctx.Err() == nil {
		list, err := b.client.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return
		}
		if len(list.Items) == 0 {
			return
		}
		w, err := b.client.CoreV1().Pods(b.ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			return
		}
		left := len(list.Items)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				if left--; left == 0 {
					break
				}
			}
		}
		w.Stop()
		if left == 0 {
			return
		}
		// The watch ended early: list again.
	}
}

func terminated(sts []corev1.ContainerStatus, name string) bool {
	for _, st := range sts {
		if st.Name == name {
			return st.State.Terminated != nil
		}
	}
	return false
}

func cond(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func condMessage(j *batchv1.Job, t batchv1.JobConditionType) string {
	for _, c := range j.Status.Conditions {
		if c.Type == t {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

func podCond(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// describePod is the pod's last seen phase, conditions and container states, for errors.
func describePod(p *corev1.Pod) string {
	if p == nil {
		return "none seen"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase %s", p.Name, p.Status.Phase)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, ", %s=%s", c.Type, c.Status)
	}
	for _, st := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		switch {
		case st.State.Terminated != nil:
			fmt.Fprintf(&b, "; %s exited %d (%s)", st.Name, st.State.Terminated.ExitCode, st.State.Terminated.Reason)
		case st.State.Running != nil:
			fmt.Fprintf(&b, "; %s running", st.Name)
		default:
			fmt.Fprintf(&b, "; %s waiting", st.Name)
		}
	}
	return b.String()
}

func durationStats(ds []time.Duration) stats {
	sorted := slices.Clone(ds)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return stats{percentile(sorted, 0.5), percentile(sorted, 0.9), sorted[0], sorted[len(sorted)-1]}
}

// reportJobs logs the figures of arms: per arm, then the tables (BENCHMARKS.md's), and the
// targets once every arm they compare has been measured.
func reportJobs(t *testing.T, samples map[jobArm][]jobSample, arms []jobArm) {
	arms = slices.DeleteFunc(slices.Clone(arms), func(a jobArm) bool { return len(samples[a]) == 0 })
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	pick := func(ss []jobSample, f func(jobSample) time.Duration) []time.Duration {
		out := make([]time.Duration, 0, len(ss))
		for _, s := range ss {
			out = append(out, f(s))
		}
		return out
	}
	label := map[jobArm]string{
		armPhase:  "(a) kruise, phase mechanism (default)",
		armCRRMec: "(a2) kruise, `--sidecar-termination=crr`",
		armNative: "(b) native sidecar (restartable init container)",
		armNone:   "(c) no sidecar",
	}
	for _, a := range arms {
		ss := samples[a]
		vals := make([]string, 0, len(ss))
		for _, s := range ss {
			vals = append(vals, fmt.Sprintf("%.3f", s.complete.Seconds()))
		}
		st := durationStats(pick(ss, func(s jobSample) time.Duration { return s.complete }))
		t.Logf("%-14s n=%d p50 %.3fs p90 %.3fs min %.3fs max %.3fs; per Job (s): %s", a, len(ss),
			st.p50.Seconds(), st.p90.Seconds(), st.min.Seconds(), st.max.Seconds(), strings.Join(vals, " "))
	}

	var out strings.Builder
	fmt.Fprintf(&out, "\nlast main container exit (CRI) → Job Complete=True (watch event received), one Job at a time\n\n")
	fmt.Fprintf(&out, "| arm | n | p50 | p90 | min | max |\n| --- | --- | --- | --- | --- | --- |\n")
	p50 := map[jobArm]time.Duration{}
	for _, a := range arms {
		st := durationStats(pick(samples[a], func(s jobSample) time.Duration { return s.complete }))
		p50[a] = st.p50
		fmt.Fprintf(&out, "| %s | %d | %s | %s | %s | %s |\n", label[a], len(samples[a]), sec(st.p50), sec(st.p90), sec(st.min), sec(st.max))
	}
	fmt.Fprintf(&out, "\nbreakdown, p50 / p90 from the main's exit:\n\n")
	fmt.Fprintf(&out, "| arm | pod status shows main exited | pod phase terminal seen | Job Complete seen | sidecar exited (CRI) |\n| --- | --- | --- | --- | --- |\n")
	for _, a := range arms {
		ss := samples[a]
		cell := func(f func(jobSample) time.Duration) string {
			st := durationStats(pick(ss, f))
			return sec(st.p50) + " / " + sec(st.p90)
		}
		side := "–"
		if a != armNone {
			side = cell(func(s jobSample) time.Duration { return s.sidecarExit })
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s |\n", label[a],
			cell(func(s jobSample) time.Duration { return s.mainSeen }),
			cell(func(s jobSample) time.Duration { return s.podTerminal }),
			cell(func(s jobSample) time.Duration { return s.complete }), side)
	}
	if has := func(a jobArm) bool { return len(samples[a]) > 0 }; has(armPhase) && has(armNative) && has(armNone) {
		fmt.Fprintf(&out, "\ntargets: (a) p50 < (b) p50: %.3f s vs %.3f s → %s; (a) p50 − (c) p50 ≤ 0.3 s: %+.3f s → %s\n",
			p50[armPhase].Seconds(), p50[armNative].Seconds(), verdict(p50[armPhase] < p50[armNative]),
			(p50[armPhase] - p50[armNone]).Seconds(), verdict(p50[armPhase]-p50[armNone] <= 300*time.Millisecond))
	}
	t.Log(out.String())
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
