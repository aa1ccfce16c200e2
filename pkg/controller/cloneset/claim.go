package cloneset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// claimPods returns the pods the CloneSet controls once it has adopted the active orphans its
// selector matches and released the pods it no longer matches, as the built-in ReplicaSet
// controller does.
func (c *Controller) claimPods(ctx context.Context, cs *appsv1beta1.CloneSet, selector labels.Selector) ([]*corev1.Pod, error) {
	owned, err := ownership.Owned[*corev1.Pod](c.podIndex, controllerKind, cs)
	if err != nil {
		return nil, err
	}
	candidates, err := c.pods.Pods(cs.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return ownership.Claim{
		Client: c.client.CoreV1(), Owner: cs, Kind: controllerKind, Selector: selector, Adoptable: Active,
		Recheck: func(ctx context.Context) (metav1.Object, error) {
			return c.kruiseClient.AppsV1beta1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
		},
	}.Pods(ctx, owned, candidates)
}

// ownedClaims are the PVCs the CloneSet controls.
func (c *Controller) ownedClaims(cs *appsv1beta1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	return ownership.Owned[*corev1.PersistentVolumeClaim](c.claimIndex, controllerKind, cs)
}
