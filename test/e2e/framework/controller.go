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

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
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

// WaitWebhookAnswers waits until the API server reaches kruise's webhook Service: a dry-run
// create of a v1alpha1 CloneSet (converted through /convert, then defaulted and validated by
// kruise) is admitted. The Deployment being available is not enough: after the controller pods
// or the API server restart, the Service's endpoints and the API server's view of them follow a
// moment later, and until then every kruise object is refused with "no endpoints available".
func (f *Framework) WaitWebhookAnswers(ctx context.Context, t testing.TB, timeout time.Duration) {
	t.Helper()
	kc := f.KruiseClient(t)
	labels := map[string]string{"app": "webhook-probe"}
	probe := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: metav1.NamespaceDefault},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}}},
			},
		},
	}
	WaitFor(ctx, t, timeout, "the API server reaching kruise's webhook (a dry-run CloneSet admitted)", func(ctx context.Context) (bool, string, error) {
		_, err := kc.AppsV1alpha1().CloneSets(probe.Namespace).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error(), nil
		}
		return true, "admitted", nil
	})
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
