//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A sleep preStop hook (which the CRR's OpenKruise-compatible preStop type cannot hold) runs
// from the pod's own spec before the stop: the old instance ends no sooner than the sleep.
func TestCRRPreStopSleep(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-sleep")

	const sleepSeconds = 4
	pod := f.BusyboxPod(ns, "web", "main")
	// The API server requires a sleep hook shorter than the pod's grace period.
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: sleepSeconds}},
	}
	pod = f.CreateRunningPod(ctx, t, pod)

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](30)}
	created, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	got := framework.WaitCRR(ctx, t, kc, ns, "r", 90*time.Second, "CRR completed", completed)
	if s := got.Status.ContainerRecreateStates; len(s) != 1 || s[0].Phase != appsv1alpha1.ContainerRecreateRequestSucceeded {
		t.Fatalf("container states %+v, want main Succeeded", s)
	}

	cur, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := cur.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if old == nil {
		t.Fatalf("no terminated previous instance in %+v", cur.Status.ContainerStatuses[0])
	}
	// Timestamps have whole-second resolution: allow one second of rounding.
	if ran := old.FinishedAt.Sub(created.CreationTimestamp.Time); ran < (sleepSeconds-1)*time.Second {
		t.Fatalf("the old instance finished %v after the CRR was created: the %ds sleep hook did not run first", ran, sleepSeconds)
	}
	if cur.Status.ContainerStatuses[0].ContainerID == pod.Status.ContainerStatuses[0].ContainerID {
		t.Fatal("the container was not recreated")
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

// An httpGet preStop hook is sent by the daemon (host network) to the pod IP before the stop:
// the previous instance's httpd logged the request. busybox httpd logs request URLs with -vv
// (-v logs only the response code).
func TestCRRPreStopHTTP(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-prestop-http")
	pod := f.BusyboxPod(ns, "web", "main")
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sh", "-c", `trap "exit 0" TERM; httpd -f -vv -p 8080 & wait`}
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/prestop-marker", Port: intstr.FromInt32(8080)},
	}}
	before := f.CreateRunningPod(ctx, t, pod)

	crr := crrFor(ns, "r", "web", "main")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](10)}
	got := runCRR(ctx, t, kc, crr)
	requireSucceeded(t, got, "main")
	after := getPod(ctx, t, f, ns, "web")
	if containerStatus(after, "main").ContainerID == containerStatus(before, "main").ContainerID {
		t.Fatalf("container ID unchanged")
	}
	framework.WaitFor(ctx, t, 30*time.Second, "the previous instance's log to show the preStop request", func(ctx context.Context) (bool, string, error) {
		logs, err := f.PreviousPodLogs(ctx, ns, "web", "main")
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return strings.Contains(logs, "url:/prestop-marker"), logs, nil
	})
}
