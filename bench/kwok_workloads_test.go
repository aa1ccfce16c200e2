//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// createReplicaSetPods creates, in ns, sets ReplicaSets named name(i) of pods replicas (one
// container of img) and, with no kube-controller-manager to make them, their pods: owned by the
// ReplicaSet (controller reference), labelled with its selector. mutate (nil: none) changes pod k
// of set i before it is created.
func createReplicaSetPods(ctx context.Context, c *kwokCluster, ns string, sets, pods int, name func(int) string, img string,
	mutate func(set, k int, pod *corev1.Pod)) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range sets {
		labels := map[string]string{"app": name(i)}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(int32(pods)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}},
				},
			},
		}
		created, err := c.kube.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating ReplicaSet %s: %w", rs.Name, err)
		}
		owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: created.Name, UID: created.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		for k := range pods {
			g.Go(func() error {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{GenerateName: created.Name + "-", Namespace: ns,
						Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
					Spec: *rs.Spec.Template.Spec.DeepCopy(),
				}
				if mutate != nil {
					mutate(i, k, pod)
				}
				if _, err := c.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("creating a pod of %s: %w", created.Name, err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// waitPodsReady waits until total pods of ns are Running and Ready.
func waitPodsReady(ctx context.Context, t *testing.T, c *kwokCluster, ns string, total int, timeout time.Duration) {
	t.Helper()
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		ready = 0
		for i := range list.Items {
			if list.Items[i].Status.Phase == corev1.PodRunning && conditionTrue(&list.Items[i], corev1.PodReady) {
				ready++
			}
		}
		return ready == total, nil
	})
	if err != nil {
		t.Fatalf("%d of %d pods of %s Running and Ready: %v", ready, total, ns, err)
	}
}
