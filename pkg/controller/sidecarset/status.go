package sidecarset

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// counts are the status's pod counts.
type counts struct {
	matched, updated, ready, updatedReady int32
}

// tally counts views (the SidecarSet's injected, active pods). Updated: the pod records the
// SidecarSet's hash. Ready: the pod is Ready and no upgrade by the SidecarSet is still running
// on it; so an upgraded pod is updated at once and updated-ready once its new sidecars run.
func tally(views []podView) counts {
	var n counts
	for _, v := range views {
		n.matched++
		if v.updated {
			n.updated++
		}
		if v.ready {
			n.ready++
			if v.updated {
				n.updatedReady++
			}
		}
	}
	return n
}

// newStatus is ss's status after a pass that counted n and resolved latestRevision with
// collisionCount.
func newStatus(ss *appsv1beta1.SidecarSet, n counts, latestRevision string, collisionCount int32) *appsv1beta1.SidecarSetStatus {
	st := ss.Status.DeepCopy()
	st.ObservedGeneration = ss.Generation
	st.MatchedPods, st.UpdatedPods, st.ReadyPods, st.UpdatedReadyPods = n.matched, n.updated, n.ready, n.updatedReady
	if latestRevision != "" {
		st.LatestRevision = latestRevision
	}
	if collisionCount != 0 || st.CollisionCount != nil {
		st.CollisionCount = &collisionCount
	}
	return st
}

// writeStatus stores st as ss's status unless it is already.
func (c *Controller) writeStatus(ctx context.Context, ss *appsv1beta1.SidecarSet, st *appsv1beta1.SidecarSetStatus) error {
	if apiequality.Semantic.DeepEqual(st, &ss.Status) {
		return nil
	}
	out := ss.DeepCopy()
	out.Status = *st
	_, err := c.kruiseClient.AppsV1beta1().SidecarSets().UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of SidecarSet %s: %w", ss.Name, err)
	}
	return nil
}
