//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// matchAllSidecar is the container a SidecarSet selecting every pod injects.
const matchAllSidecar = "e2e-everywhere"

// A SidecarSet whose selector matches every pod (DoesNotExist on a label no pod has) injects into
// a tenant's pods, but never into kruise's own namespace or kube-system, whose pods are never sent
// to the webhook at all. So when every kruise-controller pod is deleted at once, their ReplicaSet
// creates them again without a ready replica to call (the webhook's failurePolicy is Fail in the
// local install): kruise comes back by itself, without the sidecar.
func TestMatchAllSidecarSetNeverStopsKruise(t *testing.T) {
	ctx := framework.Context(t, 10*time.Minute)
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ns := f.NewNamespace(ctx, t, "match-all")
	before := leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)

	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-match-all"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kruise.e2e/no-such-label", Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
			Containers: []appsv1beta1.SidecarContainer{{Container: f.BusyboxContainer(matchAllSidecar)}},
		},
	}
	if _, err := kc.AppsV1beta1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating SidecarSet %s: %v", ss.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kc.AppsV1beta1().SidecarSets().Delete(ctx, ss.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting SidecarSet %s: %v", ss.Name, err)
		}
	})

	injected := func(ctx context.Context, namespace string) (bool, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: namespace, Labels: map[string]string{"app": "probe"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}}}}
		out, err := f.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(out.Spec.Containers, func(c corev1.Container) bool { return c.Name == matchAllSidecar }), nil
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "a tenant's pod injected (the SidecarSet selects every pod)", func(ctx context.Context) (bool, string, error) {
		ok, err := injected(ctx, ns)
		if err != nil {
			return false, err.Error(), nil
		}
		return ok, fmt.Sprintf("injected: %v", ok), nil
	})
	for _, excluded := range []string{framework.KruiseNamespace, metav1.NamespaceSystem} {
		ok, err := injected(ctx, excluded)
		if err != nil {
			t.Fatalf("a pod of %s refused while kruise runs: %v", excluded, err)
		}
		if ok {
			t.Errorf("a pod of %s was injected with %s", excluded, matchAllSidecar)
		}
	}

	// Every replica at once: nothing serves the webhook until a new one is ready.
	leaderAllDown(ctx, t, f, int32(len(before)))()
	after := leaderWaitReplicasAvailable(ctx, t, f, 4*time.Minute)
	for _, p := range after {
		for _, old := range before {
			if p.UID == old.UID {
				t.Fatalf("pod %s was not replaced", p.Name)
			}
		}
		for _, c := range p.Spec.Containers {
			if c.Name == matchAllSidecar {
				t.Errorf("kruise-controller pod %s got the sidecar %s", p.Name, c.Name)
			}
		}
		if _, ok := p.Annotations["kruise.io/sidecarset-injected-list"]; ok {
			t.Errorf("kruise-controller pod %s was injected: %v", p.Name, p.Annotations)
		}
	}
}
