//go:build e2e

package e2e

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// sidecarJobTimeout bounds a sidecar Job from creation to a terminal condition on the local
// cluster; sidecarStopTimeout bounds the kubelet stopping the sidecars once the phase is recorded.
const (
	sidecarJobTimeout  = 2 * time.Minute
	sidecarStopTimeout = time.Minute
	sidecarEventWait   = 30 * time.Second
)

// requireRecorded checks what kruise-controller recorded on a finished pod: its phase, the
// SidecarTerminated condition with reason and the sidecars it set out to stop (in any order), and
// the annotation that makes the kubelet act on it.
func requireRecorded(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase, reason string, sidecars ...string) *corev1.PodCondition {
	t.Helper()
	desc := framework.DescribeSidecarPod(pod)
	if pod.Status.Phase != phase {
		t.Errorf("pod phase %s, want %s; pod: %s", pod.Status.Phase, phase, desc)
	}
	cond := framework.PodConditionOf(pod, framework.ConditionSidecarTerminated)
	if cond == nil {
		t.Fatalf("pod has no %s condition; pod: %s", framework.ConditionSidecarTerminated, desc)
	}
	if cond.Status != corev1.ConditionTrue || cond.Reason != reason {
		t.Errorf("condition %s=%s reason %q, want True reason %q; pod: %s", cond.Type, cond.Status, cond.Reason, reason, desc)
	}
	want := append([]string(nil), sidecars...)
	sort.Strings(want)
	if got := framework.StoppingSidecars(cond); !reflect.DeepEqual(got, want) {
		t.Errorf("condition message %q stops sidecars %v, want %v", cond.Message, got, want)
	}
	if _, ok := pod.Annotations[framework.AnnotationSidecarTerminatedAt]; !ok {
		t.Errorf("pod lacks annotation %s; annotations %v", framework.AnnotationSidecarTerminatedAt, pod.Annotations)
	}
	return cond
}

// requireExit checks that the container terminated with code and never restarted.
func requireExit(t *testing.T, pod *corev1.Pod, container string, code int32) *corev1.ContainerStateTerminated {
	t.Helper()
	st := framework.ContainerStatusOf(pod, container)
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("container %s is not terminated; pod: %s", container, framework.DescribeSidecarPod(pod))
	}
	if st.State.Terminated.ExitCode != code {
		t.Errorf("container %s exited %d (%s), want %d; pod: %s", container, st.State.Terminated.ExitCode,
			st.State.Terminated.Reason, code, framework.DescribeSidecarPod(pod))
	}
	if st.RestartCount != 0 {
		t.Errorf("container %s restarted %d times, want 0; pod: %s", container, st.RestartCount, framework.DescribeSidecarPod(pod))
	}
	return st.State.Terminated
}

// createSidecarJob creates a Job (no retries) of one pod with restart and containers.
func createSidecarJob(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, restart corev1.RestartPolicy,
	containers ...corev1.Container) {
	t.Helper()
	job := framework.SidecarJob(ns, name, restart, containers...)
	if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job %s/%s: %v", ns, name, err)
	}
}

// restartNever: once the main exits 0, kruise records Succeeded; the Job completes although its
// sidecar never ends on its own, and the sidecar is stopped by SIGTERM (its 143 does not fail the
// Job).
func TestSidecarNeverMainSucceeds(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-never")
	img := f.Image("public/busybox:1.35")

	createSidecarJob(ctx, t, f, ns, "job", corev1.RestartPolicyNever,
		framework.ShContainer("main", img, "echo main-done"),
		framework.ShContainer("sidecar", img, framework.ScriptUntilTERM, framework.SidecarMark()))
	f.WaitJobComplete(ctx, t, ns, "job", sidecarJobTimeout)
	pod := f.JobPod(ctx, t, ns, "job")
	pod = f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")

	cond := requireRecorded(t, pod, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "sidecar")
	if !strings.Contains(cond.Message, "main exited 0") {
		t.Errorf("condition message %q does not report main exited 0", cond.Message)
	}
	requireExit(t, pod, "main", 0)
	requireExit(t, pod, "sidecar", 143)
	f.WaitPodEvent(ctx, t, pod, framework.EventTerminatingSidecars, sidecarEventWait, "Succeeded", "sidecar")
	if ev := f.EventsWithReason(ctx, t, pod, framework.EventSidecarKilled); len(ev) > 0 {
		t.Errorf("unexpected %s event for a sidecar that exits on SIGTERM: %s", framework.EventSidecarKilled, ev[0].Message)
	}
}

// restartNever and a main that fails: the pod is Failed as its main decided, and so is the Job.
func TestSidecarNeverMainFails(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-fail")
	img := f.Image("public/busybox:1.35")

	createSidecarJob(ctx, t, f, ns, "job", corev1.RestartPolicyNever,
		framework.ShContainer("main", img, "exit 3"),
		framework.ShContainer("sidecar", img, framework.ScriptUntilTERM, framework.SidecarMark()))
	f.WaitJobFailed(ctx, t, ns, "job", sidecarJobTimeout)
	pod := f.JobPod(ctx, t, ns, "job")
	pod = f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")

	cond := requireRecorded(t, pod, corev1.PodFailed, framework.ReasonMainContainersFailed, "sidecar")
	if !strings.Contains(cond.Message, "main exited 3") {
		t.Errorf("condition message %q does not report main exited 3", cond.Message)
	}
	requireExit(t, pod, "main", 3)
	requireExit(t, pod, "sidecar", 143)
	f.WaitPodEvent(ctx, t, pod, framework.EventTerminatingSidecars, sidecarEventWait, "Failed", "sidecar")
}

// restartOnFailure: a sidecar that exits 143 on SIGTERM is not restarted by the kubelet and does
// not keep the Job from completing (OpenKruise's bug #1366).
func TestSidecarOnFailureNotRestarted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-onfailure")
	img := f.Image("public/busybox:1.35")

	createSidecarJob(ctx, t, f, ns, "job", corev1.RestartPolicyOnFailure,
		framework.ShContainer("main", img, "exit 0"),
		framework.ShContainer("sidecar", img, framework.ScriptUntilTERM, framework.SidecarMark()))
	f.WaitJobComplete(ctx, t, ns, "job", sidecarJobTimeout)
	pod := f.JobPod(ctx, t, ns, "job")
	pod = f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")

	requireRecorded(t, pod, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "sidecar")
	requireExit(t, pod, "main", 0)
	requireExit(t, pod, "sidecar", 143)
	// A restart after a non-zero exit would come at once (no back-off before the first one):
	// the sidecar must stay terminated.
	framework.Consistently(ctx, t, 5*time.Second, "the sidecar stays terminated and is not restarted", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := framework.ContainerStatusOf(p, "sidecar")
		ok := p.Status.Phase == corev1.PodSucceeded && st != nil && st.RestartCount == 0 && st.State.Terminated != nil
		return ok, framework.DescribeSidecarPod(p), nil
	})
}

// Several mains and sidecars: kruise waits for the slow main, then stops only the sidecars still
// running (s1 and s3, the latter marked by _WITH_IMAGE alone), not s2 which already ended.
func TestSidecarSeveralMainsAndSidecars(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-many")
	img := f.Image("public/busybox:1.35")

	// m2 ends a second after s2 has ended, whatever the order and delay in which the kubelet
	// starts the containers: s2 leaves a file in a shared volume when it is done.
	job := framework.SidecarJob(ns, "job", corev1.RestartPolicyNever,
		framework.ShContainer("m1", img, "exit 0"),
		framework.ShContainer("m2", img, "until [ -e /shared/s2-done ]; do sleep 0.2; done; sleep 1; exit 0"),
		framework.ShContainer("s1", img, framework.ScriptUntilTERM, framework.SidecarMark()),
		framework.ShContainer("s2", img, "touch /shared/s2-done; exit 0", corev1.EnvVar{Name: framework.EnvTerminateSidecar, Value: "TRUE"}),
		framework.ShContainer("s3", img, framework.ScriptUntilTERM, framework.SidecarImageMark(img)))
	spec := &job.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	for i := range spec.Containers {
		if n := spec.Containers[i].Name; n == "m2" || n == "s2" {
			spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: "shared", MountPath: "/shared"})
		}
	}
	if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job %s/%s: %v", ns, "job", err)
	}
	f.WaitJobComplete(ctx, t, ns, "job", sidecarJobTimeout)
	pod := f.JobPod(ctx, t, ns, "job")
	pod = f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "s1", "s3")

	cond := requireRecorded(t, pod, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "s1", "s3")
	for _, s := range []string{"m1 exited 0", "m2 exited 0"} {
		if !strings.Contains(cond.Message, s) {
			t.Errorf("condition message %q does not report %q", cond.Message, s)
		}
	}
	requireExit(t, pod, "m1", 0)
	m2 := requireExit(t, pod, "m2", 0)
	requireExit(t, pod, "s1", 143)
	s2 := requireExit(t, pod, "s2", 0)
	requireExit(t, pod, "s3", 143)
	// The phase was recorded after the slow main ended, not when the first one did.
	if cond.LastTransitionTime.Before(&m2.FinishedAt) {
		t.Errorf("condition recorded at %s, before m2 finished at %s", cond.LastTransitionTime, m2.FinishedAt)
	}
	if s2.FinishedAt.After(m2.FinishedAt.Time) {
		t.Errorf("s2 finished at %s, after m2 at %s, although m2 waits for s2", s2.FinishedAt, m2.FinishedAt)
	}
}

// A sidecar that ignores SIGTERM is killed when the pod's grace period ends; the pod keeps the
// phase its main decided and an Event says the sidecar was killed.
func TestSidecarIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-kill")
	img := f.Image("public/busybox:1.35")

	job := framework.SidecarJob(ns, "job", corev1.RestartPolicyNever,
		framework.ShContainer("main", img, "exit 0"),
		framework.ShContainer("sidecar", img, framework.ScriptIgnoreTERM, framework.SidecarMark()))
	job.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3)
	if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job: %v", err)
	}
	f.WaitJobComplete(ctx, t, ns, "job", sidecarJobTimeout)
	pod := f.JobPod(ctx, t, ns, "job")
	pod = f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")

	cond := requireRecorded(t, pod, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "sidecar")
	term := requireExit(t, pod, "sidecar", 137)
	// Killed at the end of the 3 s grace period (timestamps have a resolution of one second).
	if held := term.FinishedAt.Sub(cond.LastTransitionTime.Time); held < 2*time.Second || held > 30*time.Second {
		t.Errorf("sidecar finished %s after the phase was recorded, want about the 3s grace period", held)
	}
	f.WaitPodEvent(ctx, t, pod, framework.EventSidecarKilled, sidecarEventWait, "sidecar", "137")
}

// The sidecar's preStop hook runs before it is stopped: it writes to the container's own log.
func TestSidecarPreStopRuns(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-prestop")
	img := f.Image("public/busybox:1.35")

	sidecar := framework.ShContainer("sidecar", img, framework.ScriptUntilTERM, framework.SidecarMark())
	sidecar.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo prestop-ran > /proc/1/fd/1"}},
	}}
	createSidecarJob(ctx, t, f, ns, "job", corev1.RestartPolicyNever, framework.ShContainer("main", img, "exit 0"), sidecar)
	f.WaitJobComplete(ctx, t, ns, "job", sidecarJobTimeout)
	pod := f.JobPod(ctx, t, ns, "job")
	pod = f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")

	requireRecorded(t, pod, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "sidecar")
	requireExit(t, pod, "sidecar", 143)
	logs, err := f.PodLogs(ctx, ns, pod.Name, "sidecar")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "prestop-ran") {
		t.Errorf("sidecar log %q lacks prestop-ran: the preStop hook did not run; pod: %s", logs, f.DescribePodWithEvents(ctx, ns, pod.Name))
	}
}

// On a virtual-kubelet node (a Node object with no kubelet: the test plays the provider) kruise
// replaces the sidecars' images by their _WITH_IMAGE values and records nothing in the status; a
// sidecar without one is reported.
func TestSidecarVirtualKubeletReplacesImage(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-vk")
	img := f.Image("public/busybox:1.35")
	quickExit := f.Image("public/busybox:quick-exit")
	node := f.CreateVirtualKubeletNode(ctx, t)

	pod := framework.SidecarPod(ns, "vk-pod",
		framework.ShContainer("main", img, "exit 0"),
		framework.ShContainer("sc-img", img, framework.ScriptUntilTERM, framework.SidecarImageMark(quickExit)),
		framework.ShContainer("sc-plain", img, framework.ScriptUntilTERM, framework.SidecarMark()))
	pod.Spec.NodeName = node
	// The node never becomes Ready: tolerate the taints that would evict the pod meanwhile.
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	created, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	f.DeletePodNow(t, ns, pod.Name)

	// Act as the provider: the pod runs, its main has exited 0, both sidecars still run.
	started := metav1.NewTime(time.Now().Add(-5 * time.Second))
	finished := metav1.NewTime(time.Now().Add(-time.Second))
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: name, Image: img, ImageID: img, ContainerID: "vk://" + ns + "/" + name,
			Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}
	}
	status := created.DeepCopy()
	status.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &started,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: finished},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: finished},
		},
		ContainerStatuses: []corev1.ContainerStatus{
			{
				Name: "main", Image: img, ImageID: img, ContainerID: "vk://" + ns + "/main", Started: ptr.To(false),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: finished,
				}},
			},
			running("sc-img"),
			running("sc-plain"),
		},
	}
	if _, err := f.Client.CoreV1().Pods(ns).UpdateStatus(ctx, status, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the pod's status as the provider would: %v", err)
	}

	got := f.WaitPod(ctx, t, ns, pod.Name, time.Minute, "sc-img's image replaced by "+quickExit, func(p *corev1.Pod) (bool, error) {
		return framework.ContainerSpecOf(p, "sc-img").Image == quickExit, nil
	})
	if c := framework.ContainerSpecOf(got, "sc-plain"); c.Image != img {
		t.Errorf("sc-plain's image changed to %s, want it left as %s", c.Image, img)
	}
	if c := framework.ContainerSpecOf(got, "main"); c.Image != img {
		t.Errorf("main's image changed to %s, want it left as %s", c.Image, img)
	}
	f.WaitPodEvent(ctx, t, created, framework.EventSidecarImageReplaced, sidecarEventWait, "sc-img="+quickExit)
	ev := f.WaitPodEvent(ctx, t, created, framework.EventSidecarNotTerminated, sidecarEventWait, "sc-plain", framework.EnvTerminateSidecarWithImage)
	if ev.Type != corev1.EventTypeWarning || strings.Contains(ev.Message, "sc-img") {
		t.Errorf("%s event: type %s message %q, want a Warning naming only sc-plain", ev.Reason, ev.Type, ev.Message)
	}

	// No kubelet of ours runs there to honour a recorded phase: kruise must leave the status and
	// the annotation alone (the provider restarts sc-img with the new image instead).
	framework.Consistently(ctx, t, 3*time.Second, "the pod's phase and conditions are left to the provider", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		_, annotated := p.Annotations[framework.AnnotationSidecarTerminatedAt]
		ok := p.Status.Phase == corev1.PodRunning && framework.PodConditionOf(p, framework.ConditionSidecarTerminated) == nil && !annotated
		return ok, framework.DescribeSidecarPod(p), nil
	})
	if ev := f.EventsWithReason(ctx, t, created, framework.EventTerminatingSidecars); len(ev) > 0 {
		t.Errorf("unexpected %s event on a virtual-kubelet pod: %s", framework.EventTerminatingSidecars, ev[0].Message)
	}
}

// Bad markings are reported and the container is treated as a main (env value neither true nor
// false) or as a sidecar stopped the usual way (invalid _WITH_IMAGE on a real node). Bare pods,
// not Jobs.
func TestSidecarInvalidEnv(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecar-invalid")
	img := f.Image("public/busybox:1.35")

	t.Run("value-neither-true-nor-false", func(t *testing.T) {
		t.Parallel()
		ctx := framework.Context(t, 4*time.Minute) // a parallel subtest may wait long for a slot
		pod := framework.SidecarPod(ns, "helper-yes",
			framework.ShContainer("main", img, "exit 0"),
			framework.ShContainer("helper", img, "sleep 3; exit 0", corev1.EnvVar{Name: framework.EnvTerminateSidecar, Value: "yes"}),
			framework.ShContainer("sidecar", img, framework.ScriptUntilTERM, framework.SidecarMark()))
		created, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		ev := f.WaitPodEvent(ctx, t, created, framework.EventInvalidSidecarEnv, sidecarEventWait, `"helper"`, `"yes"`)
		if ev.Type != corev1.EventTypeWarning {
			t.Errorf("%s event has type %s, want Warning", ev.Reason, ev.Type)
		}
		f.WaitPodPhase(ctx, t, ns, pod.Name, corev1.PodSucceeded, sidecarJobTimeout)
		got := f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")

		cond := requireRecorded(t, got, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "sidecar")
		if !strings.Contains(cond.Message, "helper exited 0") {
			t.Errorf("condition message %q does not count helper as a main", cond.Message)
		}
		helper := requireExit(t, got, "helper", 0)
		if cond.LastTransitionTime.Before(&helper.FinishedAt) {
			t.Errorf("phase recorded at %s, before helper finished at %s: helper was not waited for", cond.LastTransitionTime, helper.FinishedAt)
		}
		requireExit(t, got, "main", 0)
		requireExit(t, got, "sidecar", 143)
	})

	t.Run("invalid-image-reference", func(t *testing.T) {
		t.Parallel()
		ctx := framework.Context(t, 4*time.Minute) // a parallel subtest may wait long for a slot
		pod := framework.SidecarPod(ns, "bad-image",
			framework.ShContainer("main", img, "exit 0"),
			framework.ShContainer("sidecar", img, framework.ScriptUntilTERM, framework.SidecarImageMark("Not A Valid::Ref")))
		created, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		ev := f.WaitPodEvent(ctx, t, created, framework.EventInvalidSidecarEnv, sidecarEventWait, `"sidecar"`, "not a valid image reference")
		if ev.Type != corev1.EventTypeWarning {
			t.Errorf("%s event has type %s, want Warning", ev.Reason, ev.Type)
		}
		f.WaitPodPhase(ctx, t, ns, pod.Name, corev1.PodSucceeded, sidecarJobTimeout)
		got := f.WaitContainersTerminated(ctx, t, ns, pod.Name, sidecarStopTimeout, "sidecar")
		requireRecorded(t, got, corev1.PodSucceeded, framework.ReasonMainContainersSucceeded, "sidecar")
		requireExit(t, got, "main", 0)
		requireExit(t, got, "sidecar", 143)
		if c := framework.ContainerSpecOf(got, "sidecar"); c.Image != img {
			t.Errorf("sidecar's image changed to %s on a real node", c.Image)
		}
	})
}
