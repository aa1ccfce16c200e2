//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A CRR recreates a container in place: new container ID, restart count +1, same pod IP.
func TestCRRRecreatesContainer(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-simple")
	before := f.RunningBusyboxPod(ctx, t, ns, "web", "main")

	got := runCRR(ctx, t, kc, crrFor(ns, "r", "web", "main"))
	requireSucceeded(t, got, "main")
	if got.Status.Message != "recreated 1 container" {
		t.Errorf("message %q, want %q", got.Status.Message, "recreated 1 container")
	}
	after := getPod(ctx, t, f, ns, "web")
	b, a := containerStatus(before, "main"), containerStatus(after, "main")
	if a.ContainerID == b.ContainerID {
		t.Errorf("container ID unchanged: %s", a.ContainerID)
	}
	if a.RestartCount != b.RestartCount+1 {
		t.Errorf("restartCount %d, want %d", a.RestartCount, b.RestartCount+1)
	}
	if after.Status.PodIP != before.Status.PodIP || after.UID != before.UID {
		t.Errorf("pod changed: IP %s -> %s, UID %s -> %s", before.Status.PodIP, after.Status.PodIP, before.UID, after.UID)
	}
	// OpenKruise's v1beta1 status.containerStatusSnapshot: the new instance, as the daemon saw it
	// Ready when it completed the request.
	if snap := got.Status.ContainerStatusSnapshot; len(snap) != 1 || snap[0].Name != "main" || snap[0].ContainerID == b.ContainerID ||
		snap[0].ContainerID == "" || !snap[0].Ready || snap[0].RestartCount != b.RestartCount+1 {
		t.Errorf("containerStatusSnapshot %+v, want main's new instance (not %s), ready, restartCount %d", snap, b.ContainerID, b.RestartCount+1)
	}
}

// A container whose PID 1 ignores SIGTERM is killed when the CRR's grace period ends and then
// recreated.
func TestCRRKillsContainerIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-sigterm")
	pod := f.BusyboxPod(ns, "web", "main")
	pod.Spec.Containers[0].Command = []string{"sleep", "3600"}
	before := f.CreateRunningPod(ctx, t, pod)

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](2)}
	got := runCRR(ctx, t, kc, crr)
	requireSucceeded(t, got, "main")
	// The kubelet may publish the new instance before the status that carries the old one's
	// termination (it failed once in CI read straight after the CRR), so wait for it.
	oldID := containerStatus(before, "main").ContainerID
	after := f.WaitPod(ctx, t, ns, "web", 30*time.Second, "a new instance whose last termination is recorded", func(p *corev1.Pod) (bool, error) {
		st := containerStatus(p, "main")
		return st.ContainerID != oldID && st.LastTerminationState.Terminated != nil, nil
	})
	if term := containerStatus(after, "main").LastTerminationState.Terminated; term.ExitCode != 137 {
		t.Errorf("last termination %+v, want exit code 137 (SIGKILL after the grace)", term)
	}
}

// forceRecreate stops an instance that is still in its postStart hook. On this kubelet a
// container in postStart is running in the runtime, while the pod status still shows the
// previous instance terminated (the kubelet's sync is blocked in the hook, so no status with the
// new containerID is published until the hook ends). A non-force CRR therefore cannot complete
// during the hook (it waits for the new containerID Ready), and CRRs of one pod run one at a
// time: CRR #1 gets a 3 s activeDeadlineSeconds, so the controller completes it while the new
// instance is in its 20 s postStart. CRR #2 (forceRecreate) is then admitted with the
// terminated instance as its statusContext and must stop the instance in postStart.
// The postStart is slow only from the second instance on (a marker in an emptyDir), so the pod
// becomes Ready quickly.
func TestCRRForceRecreateDuringPostStart(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-force")
	rt := framework.CRI(ctx, t)
	pod := f.BusyboxPod(ns, "web", "main")
	pod.Spec.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/state"}}
	c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "if [ -f /state/started ]; then sleep 20; fi; touch /state/started"}},
	}}
	before := f.CreateRunningPod(ctx, t, pod)
	first := containerStatus(before, "main").ContainerID

	crr1 := crrFor(ns, "first", "web", "main")
	crr1.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr1, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR first: %v", err)
	}
	done1 := framework.WaitCRR(ctx, t, kc, ns, "first", 30*time.Second, "CRR first completed (deadline)", completed)
	if !crrContainerState(done1, "main").IsKilled {
		t.Fatalf("CRR first did not stop the container: %q %+v", done1.Status.Message, done1.Status.ContainerRecreateStates)
	}

	// The second instance runs in the runtime, still in postStart: not Ready in the pod status.
	var second string
	framework.WaitFor(ctx, t, 10*time.Second, "a second instance running, in postStart", func(ctx context.Context) (bool, string, error) {
		cs, err := rt.PodContainers(ctx, string(before.UID))
		if err != nil {
			return false, "", err
		}
		cur, ok := cri.Newest(cs, "main")
		if !ok || cur.ID == cri.RawContainerID(first) || cur.State != cri.ContainerRunning {
			return false, fmt.Sprintf("newest instance %+v", cur), nil
		}
		p := getPod(ctx, t, f, ns, "web")
		if st := containerStatus(p, "main"); st.Ready || st.ContainerID == "containerd://"+cur.ID {
			return false, "", fmt.Errorf("the second instance %s is already Ready or reported (status %+v): it left postStart too early for this test", cur.ID, st)
		}
		second = cur.ID
		return true, "", nil
	})

	crr2 := crrFor(ns, "second", "web", "main")
	crr2.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: true, TerminationGracePeriodSeconds: ptr.To[int64](5)}
	got := runCRR(ctx, t, kc, crr2)
	requireSucceeded(t, got, "main")
	if !crrContainerState(got, "main").IsKilled {
		t.Errorf("CRR second did not stop the instance in postStart: %+v", got.Status.ContainerRecreateStates)
	}
	after := getPod(ctx, t, f, ns, "web")
	st := containerStatus(after, "main")
	if raw := cri.RawContainerID(st.ContainerID); raw == cri.RawContainerID(first) || raw == second {
		t.Errorf("container %s is not a third instance (first %s, second %s)", st.ContainerID, first, second)
	}
	if st.RestartCount != 2 {
		t.Errorf("restartCount %d, want 2", st.RestartCount)
	}
	cs, err := rt.PodContainers(ctx, string(before.UID))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == second && c.State != cri.ContainerExited {
			t.Errorf("the second instance %s is %s, want exited", second, c.State)
		}
	}
}
