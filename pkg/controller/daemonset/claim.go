package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"

	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// claimPods returns the pods the DaemonSet controls once it has adopted the orphans its selector
// matches and released those it no longer matches, as the built-in controllers do. A finished
// orphan is adopted too, as the built-in DaemonSet does: it is then replaced.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1beta1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	owned, err := ownership.Owned[*corev1.Pod](c.podIndex, controllerKind, ds)
	if err != nil {
		return nil, err
	}
	candidates, err := c.pods.Pods(ds.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return ownership.Claim{
		Client: c.client.CoreV1(), Owner: ds, Kind: controllerKind, Selector: selector,
		Recheck: func(ctx context.Context) (metav1.Object, error) {
			return c.kruiseClient.AppsV1beta1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		},
	}.Pods(ctx, owned, candidates)
}
