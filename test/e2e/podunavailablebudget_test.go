//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// TestPodUnavailableBudgetStatus: a budget created before its Deployment (OpenKruise #1857) counts
// the Deployment's pods once they run, follows a scale-up, and its pods get kruise.io/related-pub:
// kruise-controller's role lets it read budgets, pods and workloads and write what it writes.
func TestPodUnavailableBudgetStatus(t *testing.T) {
	f := framework.New(t)
	ctx := framework.Context(t, 5*time.Minute)
	kc := f.KruiseClient(t)
	ns := f.NewNamespace(ctx, t, "pub")

	_, err := kc.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxUnavailable:  ptr.To(intstr.FromString("25%")),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the budget: %v", err)
	}
	_, err = f.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers:                    []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", sleeper}}},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	waitBudget := func(total, desired, current, allowed int32) {
		t.Helper()
		framework.WaitFor(ctx, t, 3*time.Minute, fmt.Sprintf("budget total %d, desired %d, current %d, allowed %d", total, desired, current, allowed),
			func(ctx context.Context) (bool, string, error) {
				b, err := kc.PolicyV1alpha1().PodUnavailableBudgets(ns).Get(ctx, "web-pub", metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				st := b.Status
				return st.TotalReplicas == total && st.DesiredAvailable == desired && st.CurrentAvailable == current && st.UnavailableAllowed == allowed,
					fmt.Sprintf("status %+v", st), nil
			})
	}
	// 25% of 3 rounded up is 1 unavailable.
	waitBudget(3, 2, 3, 1)
	framework.WaitFor(ctx, t, time.Minute, "the pods annotated", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			if p.Annotations[policyv1alpha1.PodRelatedPubAnnotation] != "web-pub" {
				return false, p.Name + " not annotated", nil
			}
		}
		return len(pods.Items) == 3, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})

	// 25% of 5 rounded up is 2 unavailable.
	if _, err := f.Client.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling the Deployment: %v", err)
	}
	waitBudget(5, 3, 5, 2)
}
