//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The harness itself: real Jobs run to completion on the local kubelet with images pulled from
// the loopback registry, anonymously and through both authentication schemes.
func TestBusyboxJobFromLoopbackRegistry(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "harness")

	cases := []struct {
		name   string
		repo   string
		secret *framework.Credentials
	}{
		{name: "anonymous", repo: "public/busybox:1.35"},
		{name: "basic", repo: "basic/busybox:1.35", secret: ptr.To(framework.BasicCredentials())},
		{name: "token", repo: "token/busybox:1.35", secret: ptr.To(framework.TokenCredentials())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A context of its own: a parallel subtest may wait long for a free slot.
			ctx := framework.Context(t, 3*time.Minute)
			job := framework.BusyboxJob(ns, "job-"+tc.name, f.Image(tc.repo), "echo hello-from-"+tc.name)
			if tc.secret != nil {
				f.CreatePullSecret(ctx, t, ns, "pull-"+tc.name, *tc.secret)
				job.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull-" + tc.name}}
			}
			_, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating job: %v", err)
			}
			f.WaitJobComplete(ctx, t, ns, job.Name, 2*time.Minute)

			pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
			if err != nil || len(pods.Items) != 1 {
				t.Fatalf("listing the job's pods: %v (found %d)", err, len(pods.Items))
			}
			logs, err := f.PodLogs(ctx, ns, pods.Items[0].Name, "main")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs, "hello-from-"+tc.name) {
				t.Fatalf("job output %q lacks hello-from-%s", logs, tc.name)
			}
		})
	}
}

// A protected image without credentials must fail to pull with the registry's 401, which proves
// the registry's auth is real and that the successful cases above used their secrets.
func TestProtectedImageWithoutCredentialsFails(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "noauth")

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-credentials"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "main", Image: f.Image("basic/busybox:1.35"), Command: []string{"true"},
				// The image may already be on the node from a test with credentials; without
				// Always the kubelet would reuse it unchecked (what KEP-2535 addresses).
				ImagePullPolicy: corev1.PullAlways,
			}},
		},
	}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	msg := f.WaitPodWaitingReason(ctx, t, ns, pod.Name, time.Minute, "ErrImagePull", "ImagePullBackOff")
	if !strings.Contains(msg, "401") && !strings.Contains(strings.ToLower(msg), "unauthorized") {
		t.Fatalf("pull failed, but not for lack of authorization: %q", msg)
	}
}
