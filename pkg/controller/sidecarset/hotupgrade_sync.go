package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
)

// Event reasons of the HotUpgrade steps (documented in docs/sidecarset.md).
const (
	// EventReasonHotUpgradeFlipped: a pod's old copies were put back on the empty image.
	EventReasonHotUpgradeFlipped = "HotUpgradeFlipped"
	// EventReasonHotUpgradeFlipFailed: writing that failed.
	EventReasonHotUpgradeFlipFailed = "HotUpgradeFlipFailed"
	// EventReasonHotUpgradeBlocked: pods whose new copy does not come up; they stay handing
	// over (the old copy keeps working) until the SidecarSet names an image that does.
	EventReasonHotUpgradeBlocked = "HotUpgradeBlocked"
)

// flip is a pod whose hand-over is done, with the old copies to put to rest.
type flip struct {
	pod *corev1.Pod
	old []string
}

// flipsDue are the pods ready for step 2. Nothing is due while the SidecarSet is paused or
// not updated, as in OpenKruise.
func flipsDue(ss *appsv1beta1.SidecarSet, views []podView) []flip {
	s := ss.Spec.UpdateStrategy
	if s.Paused || s.Type == appsv1beta1.NotUpdateSidecarSetStrategyType {
		return nil
	}
	var out []flip
	for _, v := range views {
		if len(v.handingOver) == 0 || v.busy != "" {
			continue
		}
		state, err := upgradeState(v.pod, ss.Name)
		if err != nil || !readyToFlip(v.pod, state, v.handingOver) {
			continue
		}
		out = append(out, flip{pod: v.pod, old: v.handingOver})
	}
	return out
}

// flipAll writes step 2 on each pod; it returns the UIDs of the pods written and the errors of
// the others. The budget is asked first (the old copies restart on the empty image); a pod it
// holds back, or the pod webhook refuses for one, goes to waits.
func (c *Controller) flipAll(ctx context.Context, ss *appsv1beta1.SidecarSet, flips []flip, waits *budgetwait.Waits) (map[types.UID]bool, error) {
	done := map[types.UID]bool{}
	var errs []error
	for _, f := range flips {
		pod := f.pod
		data, err := planFlip(ss, pod, f.old)
		if err == nil {
			if c.budgetHolds(ctx, pod, policyv1alpha1.PubUpdateOperation, waits) {
				continue
			}
			if err = c.patchPod(ctx, pod, data); budgetRefused(pod, err, waits) {
				continue
			}
		}
		if err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				c.recorder.Eventf(ss, corev1.EventTypeWarning, EventReasonHotUpgradeFlipFailed,
					"failed to put the old sidecar copies of pod %s/%s on the empty image: %v", pod.Namespace, pod.Name, err)
			}
			errs = append(errs, fmt.Errorf("ending the hot upgrade of pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		done[pod.UID] = true
		klog.FromContext(ctx).Info("Hot upgrade handed over, old sidecar copies put on the empty image",
			"pod", klog.KObj(pod), "containers", f.old)
		c.recorder.Eventf(ss, corev1.EventTypeNormal, EventReasonHotUpgradeFlipped,
			"pod %s/%s: the new sidecar copies took over, %s put on the empty image", pod.Namespace, pod.Name, strings.Join(f.old, ", "))
	}
	return done, errors.Join(errs...)
}

// hotBlockedPods are the pods handing over whose new copy does not come up, by name → why.
func hotBlockedPods(ss *appsv1beta1.SidecarSet, views []podView) map[string]string {
	out := map[string]string{}
	for _, v := range views {
		if len(v.handingOver) == 0 {
			continue
		}
		if why := hotUpgradeBlocked(ss, v.pod); why != "" {
			out[v.pod.Namespace+"/"+v.pod.Name] = why
		}
	}
	return out
}
