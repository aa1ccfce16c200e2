//go:build e2e

package disruptive

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
	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The pod webhook is only called for pods that can need it (matchConditions), so a kruise outage
// never blocks the others. With kruise-controller scaled to 0 (no endpoint behind
// kruise-webhook-service): a pod with no launch-priority mark still creates and runs, and so
// does a marked pod in kube-system (never sent); a marked pod elsewhere is refused (the local
// install's failurePolicy Fail) with the API server's reason, as are a ContainerRecreateRequest and
// an ImagePullJob (validated at create). Scaled back, the controller is Ready and marked pods are
// admitted again.
func TestWebhookOutageBlocksOnlyMarkedPods(t *testing.T) {
	ctx := framework.Context(t, 8*time.Minute)
	f := framework.New(t)
	ns := f.NewNamespace(ctx, t, "webhook-outage")
	before := leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)
	up := leaderAllDown(ctx, t, f, int32(len(before)))

	// Not marked: never sent to kruise, created and started as usual.
	f.RunningBusyboxPod(ctx, t, ns, "unmarked", "a", "b")

	// Marked in kube-system: never sent either.
	sys := f.BusyboxPod("kube-system", "e2e-webhook-outage-"+strings.ToLower(ns[len(ns)-5:]), "a", "b")
	sys.Spec.Containers[0].Env = []corev1.EnvVar{{Name: lp.EnvPriority, Value: "1"}}
	if _, err := f.Client.CoreV1().Pods("kube-system").Create(ctx, sys, metav1.CreateOptions{}); err != nil {
		t.Errorf("a marked pod in kube-system was refused while kruise is down: %v", err)
	} else {
		t.Cleanup(func() { f.DeletePodNow(t, "kube-system", sys.Name) })
	}

	// Marked elsewhere: the API server cannot call the webhook, and failurePolicy Fail refuses.
	marked := f.BusyboxPod(ns, "marked", "a", "b")
	marked.Spec.Containers[1].Env = []corev1.EnvVar{{Name: lp.EnvPriority, Value: "1"}}
	_, err := f.Client.CoreV1().Pods(ns).Create(ctx, marked, metav1.CreateOptions{})
	switch {
	case err == nil:
		t.Errorf("a pod marked for launch priority was admitted while no webhook endpoint exists (failurePolicy Fail)")
	case !strings.Contains(err.Error(), `failed calling webhook "mpod.kb.io"`):
		t.Errorf("refused, but not for the webhook being unreachable: %v", err)
	default:
		t.Logf("marked pod refused while kruise is down: %v", err)
	}

	// kruise's own kinds are admitted at create (failurePolicy Fail in the local install): a
	// CRR (filled in by mcontainerrecreaterequest.kb.io, the first of its webhooks the API server
	// calls) and an ImagePullJob are refused too, for the webhook being unreachable. They need
	// kruise to do anything anyway; failurePolicy Ignore would admit them, and kruise-controller
	// would answer in their status once back.
	kc := f.KruiseClient(t)
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: "unmarked", Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "a"}}},
	}
	_, err = kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "mcontainerrecreaterequest.kb.io"`) {
		t.Errorf("creating a CRR while kruise is down: %v, want it refused for the webhook being unreachable", err)
	}
	_, err = kc.AppsV1beta1().ImagePullJobs(ns).Create(ctx, framework.NewImagePullJob(ns, "pull", "busybox:1.35"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "vimagepulljob-v1beta1.kb.io"`) {
		t.Errorf("creating an ImagePullJob while kruise is down: %v, want it refused for the webhook being unreachable", err)
	}

	// Back: the controller Ready again, and the marked pod admitted (the API server reaches a
	// replica once it is in the Service's endpoints).
	up()
	leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)
	framework.WaitFor(ctx, t, time.Minute, "the marked pod admitted again", func(ctx context.Context) (bool, string, error) {
		_, err := f.Client.CoreV1().Pods(ns).Create(ctx, marked.DeepCopy(), metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return true, "admitted", nil
		case apierrors.IsInternalError(err) || strings.Contains(err.Error(), "failed calling webhook"):
			return false, err.Error(), nil
		}
		return false, "", err
	})
	f.WaitPod(ctx, t, ns, marked.Name, 2*time.Minute, "launched with its barrier", func(p *corev1.Pod) (bool, error) {
		return p.Annotations[lp.AnnotationCompleted] == "true" && ptr.Deref(framework.ContainerStatusOf(p, "b"), corev1.ContainerStatus{}).Ready, nil
	})
}
