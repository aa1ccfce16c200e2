//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

func crrFor(namespace, name, pod string, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: pod},
	}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return crr
}

func completed(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	return crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted
}

func crrContainerState(crr *appsv1alpha1.ContainerRecreateRequest, name string) appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	for _, st := range crr.Status.ContainerRecreateStates {
		if st.Name == name {
			return st
		}
	}
	return appsv1alpha1.ContainerRecreateRequestContainerRecreateState{}
}

// pendingPod creates a pod no node can run (a node selector no node matches): it exists and stays
// Pending, so a CRR for it passes the validating webhook and then waits for it.
func pendingPod(ctx context.Context, t *testing.T, f *framework.Framework, namespace, name string) *corev1.Pod {
	t.Helper()
	pod := f.BusyboxPod(namespace, name, "main")
	pod.Spec.NodeSelector = map[string]string{"kruise.e2e/no-such-node": "true"}
	created, err := f.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

// endingCRR is a CRR for container main of a pendingPod that its deadline completes within a few
// seconds: a request that is admitted and completes without recreating anything.
func endingCRR(namespace, name, pod string) *appsv1alpha1.ContainerRecreateRequest {
	crr := crrFor(namespace, name, pod, "main")
	crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	return crr
}

// requireWebhookRefusal fails unless err is a validating webhook's refusal at create: the API
// server's "admission webhook <name> denied the request", 422 Invalid, with every part of want in
// its message.
func requireWebhookRefusal(t *testing.T, err error, webhook string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("created; want webhook %s to refuse it with %q", webhook, want)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("refused with reason %s (%v), want Invalid", apierrors.ReasonForError(err), err)
	}
	for _, w := range append([]string{`admission webhook "` + webhook + `" denied the request`}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("refused with %q; want the error to contain %q", err.Error(), w)
		}
	}
}
