package statefulset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"

	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// claimPods returns the pods the set controls once it has adopted the unfinished orphans its
// selector matches and released the pods it no longer matches, as the built-in controllers do.
func (c *Controller) claimPods(ctx context.Context, set *appsv1beta1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	owned, err := ownership.Owned[*corev1.Pod](c.podIndex, controllerKind, set)
	if err != nil {
		return nil, err
	}
	candidates, err := c.pods.Pods(set.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return ownership.Claim{
		Client: c.client.CoreV1(), Owner: set, Kind: controllerKind, Selector: selector,
		Adoptable: func(pod *corev1.Pod) bool { return !Finished(pod) },
		Recheck: func(ctx context.Context) (metav1.Object, error) {
			return c.kruiseClient.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		},
	}.Pods(ctx, owned, candidates)
}
