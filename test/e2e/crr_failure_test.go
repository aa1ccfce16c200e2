//go:build e2e

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// removeContainer removes a container from the runtime through the raw CRI client (cri.Runtime
// has no RemoveContainer).
func removeContainer(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	endpoint := os.Getenv("KRUISE_E2E_CRI_ENDPOINT")
	if endpoint == "" {
		endpoint = "/var/tmp/kruise-local/containerd/containerd.sock"
	}
	path, err := cri.ParseEndpoint(endpoint)
	if err != nil {
		t.Fatalf("CRI endpoint %s: %v", endpoint, err)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dialing %s: %v", path, err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := runtimeapi.NewRuntimeServiceClient(conn).RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("removing container %s: %v", id, err)
	}
}

// podWithVanishedContainer runs a restartPolicy Never pod whose container a exits at once and b
// runs, then removes a's exited container from the runtime. The kubelet keeps a's terminated
// status (and containerID), so the controller admits a CRR for a while the daemon finds no
// instance of it: a real container failure. The kubelet would start a again once it sees it gone
// (a container it has no record of counts as never started), so its CreateContainer calls for
// this namespace's pods are held until the test ends.
func podWithVanishedContainer(ctx context.Context, t *testing.T, f *framework.Framework, ns string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{
				{Name: "a", Image: f.Image("public/busybox:1.35"), Command: []string{"true"}},
				{Name: "b", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}},
			},
		},
	}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	var got *corev1.Pod
	framework.WaitFor(ctx, t, 2*time.Minute, "a terminated and b running", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = p
		a, b := containerStatus(p, "a"), containerStatus(p, "b")
		ok := p.Status.Phase == corev1.PodRunning && a.State.Terminated != nil && a.ContainerID != "" &&
			b.State.Running != nil && b.ContainerID != ""
		return ok, "phase " + string(p.Status.Phase), nil
	})
	aID := containerStatus(got, "a").ContainerID

	framework.HangRuntime(ctx, t, framework.RuntimeHang{
		Methods: []string{"CreateContainer"}, Clients: []string{"kubelet"}, PodNamespaces: []string{ns},
	})
	rt := framework.CRI(ctx, t)
	removeContainer(ctx, t, cri.RawContainerID(aID))
	cs, err := rt.PodContainers(ctx, string(got.UID))
	if err != nil {
		t.Fatalf("listing the pod's containers: %v", err)
	}
	if _, found := cri.Newest(cs, "a"); found {
		t.Fatalf("container a still in the runtime after RemoveContainer: %+v", cs)
	}

	// The kubelet keeps a's status: the controller needs its containerID to admit the CRR.
	p, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod: %v", err)
	}
	if st := containerStatus(p, "a"); p.Status.Phase != corev1.PodRunning || st.ContainerID != aID {
		t.Fatalf("after removing a: pod phase %s, a's status %+v; want Running with containerID %s", p.Status.Phase, st, aID)
	}
	return p
}

func failureCRR(ns string, policy appsv1alpha1.ContainerRecreateRequestFailurePolicyType) *appsv1alpha1.ContainerRecreateRequest {
	crr := crrFor(ns, "r", "web", "a", "b")
	crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true, FailurePolicy: policy}
	return crr
}

// failurePolicy Fail completes the request at the first failed container and leaves the rest
// untouched.
func TestCRRFailurePolicyFail(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-fail")
	pod := podWithVanishedContainer(ctx, t, f, ns)
	bID := containerStatus(pod, "b").ContainerID

	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, failureCRR(ns, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	crr := framework.WaitCRR(ctx, t, kc, ns, "r", time.Minute, "CRR completed", completed)

	if crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] != string(pod.UID) {
		t.Fatalf("CRR was not admitted (labels %v): %q", crr.Labels, crr.Status.Message)
	}
	a, b := crrContainerState(crr, "a"), crrContainerState(crr, "b")
	if a.Phase != appsv1alpha1.ContainerRecreateRequestFailed || !strings.Contains(a.Message, "runtime") {
		t.Errorf("container a: %+v, want Failed with a message about the runtime", a)
	}
	if b.Phase != appsv1alpha1.ContainerRecreateRequestPending || b.IsKilled {
		t.Errorf("container b: %+v, want Pending and not killed", b)
	}
	if !strings.Contains(crr.Status.Message, "container a failed") {
		t.Errorf("CRR message %q, want it to name container a", crr.Status.Message)
	}

	p, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod: %v", err)
	}
	if st := containerStatus(p, "b"); st.ContainerID != bID || st.State.Running == nil {
		t.Errorf("container b after the CRR: %+v, want still running as %s", st, bID)
	}
	cs, err := framework.CRI(ctx, t).PodContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatalf("listing the pod's containers: %v", err)
	}
	if c, found := cri.Newest(cs, "b"); !found || c.ID != cri.RawContainerID(bID) || c.State != cri.ContainerRunning {
		t.Errorf("runtime's b: %+v (found %v), want %s running", c, found, bID)
	}
}

// failurePolicy Ignore goes on past a failed container: b is stopped and, in a Never pod,
// counts as recreated once it has exited.
func TestCRRFailurePolicyIgnore(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-ignore")
	pod := podWithVanishedContainer(ctx, t, f, ns)

	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, failureCRR(ns, appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	crr := framework.WaitCRR(ctx, t, kc, ns, "r", time.Minute, "CRR completed", completed)

	if crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] != string(pod.UID) {
		t.Fatalf("CRR was not admitted (labels %v): %q", crr.Labels, crr.Status.Message)
	}
	a, b := crrContainerState(crr, "a"), crrContainerState(crr, "b")
	if a.Phase != appsv1alpha1.ContainerRecreateRequestFailed || !strings.Contains(a.Message, "runtime") {
		t.Errorf("container a: %+v, want Failed with a message about the runtime", a)
	}
	if b.Phase != appsv1alpha1.ContainerRecreateRequestSucceeded || !b.IsKilled {
		t.Errorf("container b: %+v, want Succeeded and killed", b)
	}
	if !strings.Contains(crr.Status.Message, "container a failed") {
		t.Errorf("CRR message %q, want it to name container a", crr.Status.Message)
	}
}
