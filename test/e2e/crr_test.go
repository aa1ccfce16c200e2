//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// crrTimeout bounds one CRR from creation to Completed on the local cluster.
const crrTimeout = 90 * time.Second

func containerStatus(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return corev1.ContainerStatus{}
}

// runCRR creates crr and waits until it is Completed.
func runCRR(ctx context.Context, t *testing.T, kc versioned.Interface, crr *appsv1alpha1.ContainerRecreateRequest) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR %s: %v", crr.Name, err)
	}
	return framework.WaitCRR(ctx, t, kc, crr.Namespace, crr.Name, crrTimeout, "CRR "+crr.Name+" completed", completed)
}

// requireSucceeded fails unless every container of the CRR Succeeded.
func requireSucceeded(t *testing.T, crr *appsv1alpha1.ContainerRecreateRequest, containers ...string) {
	t.Helper()
	got := map[string]appsv1alpha1.ContainerRecreateRequestPhase{}
	for _, st := range crr.Status.ContainerRecreateStates {
		got[st.Name] = st.Phase
	}
	for _, c := range containers {
		if got[c] != appsv1alpha1.ContainerRecreateRequestSucceeded {
			t.Fatalf("CRR %s: container %s is %q, want Succeeded (message %q, states %+v)", crr.Name, c, got[c], crr.Status.Message, crr.Status.ContainerRecreateStates)
		}
	}
}

func getPod(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := f.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	return p
}

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
}

// The recreated container's preStop hook runs (in the running container) before it is stopped:
// it writes a marker into an emptyDir that a second container reports in its log.
func TestCRRPreStopRunsBeforeStop(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-prestop")
	pod := f.BusyboxPod(ns, "web", "main", "watcher")
	pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo prestop-ran-in-$HOSTNAME > /shared/marker"}},
	}}
	pod.Spec.Containers[1].Command = []string{"sh", "-c",
		"trap 'exit 0' TERM; while true; do if [ -f /shared/marker ]; then echo \"marker: $(cat /shared/marker)\"; rm /shared/marker; fi; sleep 1; done"}
	f.CreateRunningPod(ctx, t, pod)

	got := runCRR(ctx, t, kc, crrFor(ns, "r", "web", "main"))
	requireSucceeded(t, got, "main")
	framework.WaitFor(ctx, t, 30*time.Second, "the watcher to report the preStop marker", func(ctx context.Context) (bool, string, error) {
		logs, err := f.PodLogs(ctx, ns, "web", "watcher")
		if err != nil {
			return false, "", err
		}
		return strings.Contains(logs, "marker: prestop-ran-in-web"), logs, nil
	})
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
	after := getPod(ctx, t, f, ns, "web")
	st := containerStatus(after, "main")
	if st.ContainerID == containerStatus(before, "main").ContainerID {
		t.Errorf("container ID unchanged: %s", st.ContainerID)
	}
	if term := st.LastTerminationState.Terminated; term == nil || term.ExitCode != 137 {
		t.Errorf("last termination %+v, want exit code 137 (SIGKILL after the grace)", st.LastTerminationState.Terminated)
	}
}

// Two CRRs for one pod, naming different containers, both complete: the older one first.
func TestCRRTwoRequestsForOnePod(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-two")
	f.RunningBusyboxPod(ctx, t, ns, "web", "main", "sidecar")

	// Creation times have a resolution of one second; names break ties, and a-first sorts first
	// either way.
	for _, crr := range []*appsv1alpha1.ContainerRecreateRequest{crrFor(ns, "a-first", "web", "sidecar"), crrFor(ns, "b-second", "web", "main")} {
		if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRR %s: %v", crr.Name, err)
		}
	}
	first := framework.WaitCRR(ctx, t, kc, ns, "a-first", crrTimeout, "CRR a-first completed", completed)
	second := framework.WaitCRR(ctx, t, kc, ns, "b-second", crrTimeout, "CRR b-second completed", completed)
	requireSucceeded(t, first, "sidecar")
	requireSucceeded(t, second, "main")
	if second.Status.CompletionTime.Before(first.Status.CompletionTime) {
		t.Errorf("b-second completed at %s, before a-first at %s", second.Status.CompletionTime, first.Status.CompletionTime)
	}
	pod := getPod(ctx, t, f, ns, "web")
	for _, c := range []string{"main", "sidecar"} {
		if rc := containerStatus(pod, c).RestartCount; rc != 1 {
			t.Errorf("%s restartCount %d, want 1", c, rc)
		}
	}
}

// orderedRecreate recreates two containers one after the other; both succeed.
func TestCRROrderedRecreate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-ordered")
	before := f.RunningBusyboxPod(ctx, t, ns, "web", "main", "sidecar")

	crr := crrFor(ns, "r", "web", "main", "sidecar")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true}
	got := runCRR(ctx, t, kc, crr)
	requireSucceeded(t, got, "main", "sidecar")
	after := getPod(ctx, t, f, ns, "web")
	for _, c := range []string{"main", "sidecar"} {
		b, a := containerStatus(before, c), containerStatus(after, c)
		if a.ContainerID == b.ContainerID {
			t.Errorf("%s: container ID unchanged", c)
		}
	}
	// The second container's kill starts only once the first runs again: its new instance
	// started no earlier than the first's.
	m, s := containerStatus(after, "main").State.Running, containerStatus(after, "sidecar").State.Running
	if m == nil || s == nil {
		t.Fatalf("containers not running after the CRR: main %+v sidecar %+v", m, s)
	}
	if s.StartedAt.Before(&m.StartedAt) {
		t.Errorf("sidecar restarted at %s, before main at %s", s.StartedAt, m.StartedAt)
	}
}
