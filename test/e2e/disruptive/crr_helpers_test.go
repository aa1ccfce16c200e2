//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// What the tests of CRRs under a fault (daemon killed, runtime restarted, API server stopped)
// share: CRRs and the check that each container was stopped exactly once (the identity of
// kruise's own containers, which none of these faults may restart, is in
// kruise_instances_test.go).
const (
	// resCRRTimeout bounds a CRR in flight when the fault ends → Completed: the daemon's
	// requeue backoff after a run of failed writes or CRI calls, then the kubelet restarting
	// the container and reporting it ready.
	resCRRTimeout = 4 * time.Minute
	// resQuietWindow is how long a recreated container is watched after its CRR completed, to
	// catch a second stop that comes late.
	resQuietWindow = 5 * time.Second
)

// resCRR returns a CRR of containers of pod with the grace period the daemon gives each stop.
func resCRR(namespace, name, pod string, grace int64, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:  pod,
			Strategy: &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To(grace)},
		},
	}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return crr
}

func resCreateCRR(ctx context.Context, t *testing.T, c versioned.Interface, crr *appsv1alpha1.ContainerRecreateRequest) {
	t.Helper()
	// The API server not getting an answer from the webhook (a call that timed out, a replica
	// moments after a restart) refuses the create without storing it: tried again, and said in
	// the log, for a while. Any other error, and a refusal by kruise, fails the test.
	framework.WaitFor(ctx, t, resCreateRetryTimeout, "creating CRR "+crr.Namespace+"/"+crr.Name, func(ctx context.Context) (bool, string, error) {
		_, err := c.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Create(ctx, crr.DeepCopy(), metav1.CreateOptions{})
		switch {
		case err == nil:
			return true, "created", nil
		case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed calling webhook"):
			t.Logf("creating CRR %s/%s: %v; trying again", crr.Namespace, crr.Name, err)
			return false, err.Error(), nil
		}
		return false, "", err
	})
}

// resCreateRetryTimeout bounds resCreateCRR's retries of a create the webhook did not answer.
const resCreateRetryTimeout = 30 * time.Second

func resCRRState(crr *appsv1alpha1.ContainerRecreateRequest, container string) appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	for _, st := range crr.Status.ContainerRecreateStates {
		if st.Name == container {
			return st
		}
	}
	return appsv1alpha1.ContainerRecreateRequestContainerRecreateState{}
}

func resDescribeCRR(crr *appsv1alpha1.ContainerRecreateRequest) string {
	var parts []string
	for _, st := range crr.Status.ContainerRecreateStates {
		parts = append(parts, fmt.Sprintf("%s=%s(killed=%t %q)", st.Name, st.Phase, st.IsKilled, st.Message))
	}
	return fmt.Sprintf("phase=%q message=%q containers: %s", crr.Status.Phase, crr.Status.Message, strings.Join(parts, " "))
}

// resWaitCRRCompleted waits until the CRR is Completed and checks every container Succeeded.
func resWaitCRRCompleted(ctx context.Context, t *testing.T, c versioned.Interface, namespace, name string, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	crr := framework.WaitCRR(ctx, t, c, namespace, name, resCRRTimeout, "CRR "+name+" Completed", func(crr *appsv1alpha1.ContainerRecreateRequest) bool {
		return crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted
	})
	for _, ctr := range containers {
		if st := resCRRState(crr, ctr); st.Phase != appsv1alpha1.ContainerRecreateRequestSucceeded {
			t.Errorf("CRR %s completed with container %s %q, want Succeeded: %s", name, ctr, st.Phase, resDescribeCRR(crr))
		}
	}
	return crr
}

// resRequireRecreatedOnce checks that each container of the pod was stopped exactly once since
// before, and is running again: each container's stop log (resRecordStops) shows one SIGTERM, a
// new instance runs and is ready, and the kubelet counted one restart, the instance it last saw
// end being the one that ran before. A restart the kubelet counts without a stop (an instance
// that failed to start, on a loaded node) is no second stop: it is accepted and logged when the
// instance before the current one ended with a start error, and fails the test otherwise. Then
// the pod is watched for resQuietWindow, so that a stop that comes after the CRR completed shows
// too.
func resRequireRecreatedOnce(ctx context.Context, t *testing.T, f *framework.Framework, before *corev1.Pod, containers ...string) {
	t.Helper()
	rt := framework.CRI(ctx, t)
	var notes []string
	check := func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		if p.UID != before.UID {
			return false, fmt.Sprintf("pod %s was replaced (uid %s, was %s)", p.Name, p.UID, before.UID), nil
		}
		stops, err := resStopCounts(ctx, rt, p, containers)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		var problems, seen []string
		notes = notes[:0]
		for _, name := range containers {
			b, a := framework.ContainerStatusOf(before, name), framework.ContainerStatusOf(p, name)
			seen = append(seen, fmt.Sprintf("%s stops=%d", framework.DescribeContainerStatus(a), stops[name]))
			if b == nil || a == nil {
				problems = append(problems, "no status of container "+name)
				continue
			}
			last := a.LastTerminationState.Terminated
			switch {
			case stops[name] != 1:
				problems = append(problems, fmt.Sprintf("container %s got SIGTERM %d times, want once", name, stops[name]))
			case a.ContainerID == b.ContainerID:
				problems = append(problems, fmt.Sprintf("container %s still runs instance %s", name, a.ContainerID))
			case a.State.Running == nil || !a.Ready:
				problems = append(problems, fmt.Sprintf("container %s is not running and ready", name))
			case a.RestartCount == b.RestartCount+1 && last != nil && last.ContainerID != b.ContainerID:
				problems = append(problems, fmt.Sprintf("container %s: the last instance to end is not %s", name, b.ContainerID))
			case a.RestartCount == b.RestartCount+1 && last == nil:
				// The kubelet sometimes reports no lastState for a restarted container (seen
				// with four containers restarted within seconds): the single stop logged, one
				// restart and a new instance running say enough.
				notes = append(notes, fmt.Sprintf("container %s: the kubelet reports no lastState; one stop logged, one restart counted", name))
			case a.RestartCount > b.RestartCount+1 && resStartFailed(last):
				notes = append(notes, fmt.Sprintf("container %s was stopped once, but the kubelet counts %d restarts: an instance after the stop failed to start (%s)",
					name, a.RestartCount-b.RestartCount, framework.DescribeContainerStatus(a)))
			case a.RestartCount != b.RestartCount+1:
				problems = append(problems, fmt.Sprintf("container %s restartCount %d, want %d: stopped once, so something else ended an instance",
					name, a.RestartCount, b.RestartCount+1))
			}
		}
		// What the kubelet reports of each container, and the stops each logged, go with the
		// verdict, so a failure tells a second stop from a status that lags or a failed start.
		obs := strings.Join(seen, " | ")
		if len(problems) > 0 {
			obs = strings.Join(problems, "; ") + " -- " + obs
		}
		return len(problems) == 0, obs, nil
	}
	// The CRR completes once the new instances are ready in the pod's status, so this holds at
	// once; it is awaited only for a status that lags behind the CRR's.
	framework.WaitFor(ctx, t, time.Minute, fmt.Sprintf("each of %v of pod %s stopped exactly once", containers, before.Name), check)
	framework.Consistently(ctx, t, resQuietWindow, fmt.Sprintf("no container of %v of pod %s stopped again", containers, before.Name), check)
	for _, n := range notes {
		t.Logf("NOTE: %s", n)
	}
}

// resStopsDir is where each container of a resilience pod logs the SIGTERMs it gets: an emptyDir
// shared by the pod's containers, which outlives their instances.
const resStopsDir = "/stops"

// resRecordStops makes each container of pod (a busybox shell loop with a TERM trap) append a
// line to resStopsDir/<container> on every SIGTERM, so that a test counts the stops of each
// container directly: the kubelet's restart count also counts instances that failed to start.
func resRecordStops(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "stops", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		script := c.Command[len(c.Command)-1]
		if !strings.HasPrefix(script, "trap '") {
			panic(fmt.Sprintf("resRecordStops: container %s does not start with a TERM trap: %q", c.Name, script))
		}
		c.Command[len(c.Command)-1] = fmt.Sprintf("trap 'echo TERM >> %s/%s; ", resStopsDir, c.Name) + strings.TrimPrefix(script, "trap '")
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "stops", MountPath: resStopsDir})
	}
	return pod
}

// resStopCounts reads how many SIGTERMs each of containers has logged (resRecordStops), through
// CRI in a running instance of the pod.
func resStopCounts(ctx context.Context, rt cri.Runtime, pod *corev1.Pod, containers []string) (map[string]int, error) {
	cs, err := rt.PodContainers(ctx, string(pod.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the containers of pod %s through CRI: %w", pod.Name, err)
	}
	var running *cri.Container
	for i := range cs {
		if cs[i].State == cri.ContainerRunning {
			running = &cs[i]
			break
		}
	}
	if running == nil {
		return nil, fmt.Errorf("no container of pod %s runs to read its stop logs in", pod.Name)
	}
	script := fmt.Sprintf(`for c in %s; do echo "$c $(cat %s/$c 2>/dev/null | wc -l)"; done`, strings.Join(containers, " "), resStopsDir)
	res, err := rt.ExecSync(ctx, running.ID, []string{"sh", "-c", script}, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("reading the stop logs of pod %s: %w", pod.Name, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("reading the stop logs of pod %s: exit %d: %s", pod.Name, res.ExitCode, res.Stderr)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		var name string
		var n int
		if _, err := fmt.Sscan(line, &name, &n); err == nil {
			counts[name] = n
		}
	}
	return counts, nil
}

// resStartFailed reports whether an instance ended without having run: the runtime could not
// start it (reason StartError or ContainerCannotRun, exit code 128).
func resStartFailed(t *corev1.ContainerStateTerminated) bool {
	return t != nil && (t.Reason == "StartError" || t.Reason == "ContainerCannotRun" || t.ExitCode == 128)
}

// resSlowStopPod is a pod of busybox containers that each handle SIGTERM by logging "got TERM"
// and exiting only after stopSeconds, with a grace period long enough for that. A second SIGTERM
// (a stop asked again) is ignored rather than starting the wait over.
func resSlowStopPod(f *framework.Framework, namespace, name string, stopSeconds int, containers ...string) *corev1.Pod {
	pod := f.BusyboxPod(namespace, name, containers...)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(stopSeconds) + 30)
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Command = []string{"sh", "-c",
			fmt.Sprintf(`trap 'echo got TERM; trap "" TERM; sleep %d; exit 0' TERM; while true; do sleep 1; done`, stopSeconds)}
	}
	return resRecordStops(pod)
}

// resPreStopPod is a pod of busybox containers whose preStop hook (an exec, which the daemon runs
// through CRI) takes seconds.
func resPreStopPod(f *framework.Framework, namespace, name string, seconds int, containers ...string) *corev1.Pod {
	pod := resRecordStops(f.BusyboxPod(namespace, name, containers...))
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"sleep", fmt.Sprint(seconds)}},
		}}
	}
	return pod
}

// resStartSecondInHook creates CRR r of containers first and second of pod web (not ordered, a
// grace of 60 s) and waits until the daemon has stopped the first and runs the second's preStop
// hook: the moment the faults of these tests strike.
func resStartSecondInHook(ctx context.Context, t *testing.T, e *faultEnv) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	resCreateCRR(ctx, t, e.c, resCRR(e.ns, "r", "web", 60, "first", "second"))
	return framework.WaitCRR(ctx, t, e.c, e.ns, "r", 2*time.Minute, "CRR r: first stopped, second in its preStop hook",
		func(c *appsv1alpha1.ContainerRecreateRequest) bool {
			first, second := resCRRState(c, "first"), resCRRState(c, "second")
			return first.IsKilled && second.Phase == appsv1alpha1.ContainerRecreateRequestRecreating && !second.IsKilled
		})
}

// crrKillPreStopSeconds is each container's preStop hook: long enough that the test sees the
// daemon in the second container's hook and kills it there, well before the hook ends.
const crrKillPreStopSeconds = 15
