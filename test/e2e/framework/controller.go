package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lp "github.com/nodekruise/kruise/pkg/launchpriority"
)

// ControllerDeployment is kruise-controller's Deployment (in KruiseNamespace).
const ControllerDeployment = "kruise-controller"

// LiveControllerPods lists kruise-controller's pods that are not being deleted.
func (f *Framework) LiveControllerPods(ctx context.Context, t testing.TB) []corev1.Pod {
	t.Helper()
	pods, err := f.ControllerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// WaitControllerRolledOut waits until Deployment kruise-controller has rolled out with every
// replica updated, available and Ready, and no pod of an older ReplicaSet left, and returns its
// pods.
func (f *Framework) WaitControllerRolledOut(ctx context.Context, t testing.TB, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	WaitFor(ctx, t, timeout, "Deployment "+ControllerDeployment+" rolled out with every replica available", func(ctx context.Context) (bool, string, error) {
		d, err := f.Client.AppsV1().Deployments(KruiseNamespace).Get(ctx, ControllerDeployment, metav1.GetOptions{})
		if err != nil {
			return false, "", Retry(err)
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		s := d.Status
		desc := fmt.Sprintf("generation %d observed %d; replicas %d updated %d ready %d available %d, want %d; pods: %s",
			d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, want,
			f.DescribePods(ctx, KruiseNamespace, ControllerSelector))
		if s.ObservedGeneration < d.Generation || s.Replicas != want || s.UpdatedReplicas != want || s.AvailableReplicas != want {
			return false, desc, nil
		}
		pods = f.LiveControllerPods(ctx, t)
		if int32(len(pods)) != want {
			return false, desc, nil
		}
		for i := range pods {
			if !PodReady(&pods[i]) {
				return false, desc, nil
			}
		}
		return true, desc, nil
	})
	return pods
}

// WaitWebhookServes waits until every pod serves leaf on its webhook port (a pod address is
// reachable from this host on the local cluster).
func WaitWebhookServes(ctx context.Context, t testing.TB, pods []corev1.Pod, leaf *x509.Certificate) {
	t.Helper()
	WaitFor(ctx, t, time.Minute, "every replica serving certificate "+leaf.SerialNumber.Text(16), func(ctx context.Context) (bool, string, error) {
		var stale []string
		for _, p := range pods {
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only the certificate is read
			conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, "9876"))
			if err != nil {
				return false, "", Retry(fmt.Errorf("%s: %w", p.Name, err))
			}
			state := conn.(*tls.Conn).ConnectionState()
			_ = conn.Close()
			if len(state.PeerCertificates) == 0 || !state.PeerCertificates[0].Equal(leaf) {
				stale = append(stale, p.Name)
			}
		}
		return len(stale) == 0, "still serving another one: " + strings.Join(stale, ", "), nil
	})
}

// RequirePodWebhookMutates creates a pod marked for launch priority (container a at priority 1,
// b at 0), deletes it at once, and fails the test unless the pod webhook gave b its barrier env:
// the API server called kruise and trusted its certificate.
func (f *Framework) RequirePodWebhookMutates(ctx context.Context, t testing.TB, namespace, name string) {
	t.Helper()
	pod := f.BusyboxPod(namespace, name, "a", "b")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: lp.EnvPriority, Value: "1"}}
	created, err := f.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating marked pod %s: %v", name, err)
	}
	f.DeletePodNow(t, namespace, name)
	if b := created.Spec.Containers[1]; !slices.ContainsFunc(b.Env, func(e corev1.EnvVar) bool { return e.Name == lp.EnvBarrier }) {
		t.Errorf("pod %s container %s has no %s env: the pod webhook did not mutate it", name, b.Name, lp.EnvBarrier)
	}
}
