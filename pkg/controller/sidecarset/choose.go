package sidecarset

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/partition"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

// choice is what a pass does with the SidecarSet's pods.
type choice struct {
	// upgrade are the pods to upgrade in place now, in order.
	upgrade []*corev1.Pod
	// notUpgradable are pods the strategy selects that differ in more than images: they are
	// left and reported.
	notUpgradable []*corev1.Pod
	// waiting are upgradable pods held back by their own workload's update or an annotation
	// that does not parse (podView.busy), by name → why.
	waiting map[string]string
	// hotBlocked are pods whose HotUpgrade hand-over waits on a new copy that does not come
	// up, by name → why (hotUpgradeBlocked).
	hotBlocked map[string]string
	// recheck, when not 0, is when to look again at candidates not Ready too recently to take.
	recheck time.Duration
}

// strategyBudget is what the update strategy allows over the matched pods.
type strategyBudget struct {
	// keep is how many matched pods the partition keeps at an older version.
	keep int
	// maxUnavailable is how many matched pods the SidecarSet's upgrades may make unavailable.
	maxUnavailable int
}

func budgetOf(s appsv1beta1.SidecarSetUpdateStrategy, matched int) (strategyBudget, error) {
	b := strategyBudget{maxUnavailable: appsv1beta1.DefaultSidecarSetMaxUnavailable}
	if p := s.Partition; p != nil && (p.Type != intstr.Int || p.IntVal > 0) {
		// As a CloneSet's (and OpenKruise's SidecarSet's): a percentage below 100% keeps at most
		// all but one pod.
		keep, err := partition.Count(p, matched)
		if err != nil {
			return b, fmt.Errorf("updateStrategy.partition: %w", err)
		}
		b.keep = keep
	}
	if s.MaxUnavailable != nil {
		mu, err := intstr.GetScaledValueFromIntOrPercent(s.MaxUnavailable, matched, true)
		if err != nil {
			return b, fmt.Errorf("updateStrategy.maxUnavailable: %w", err)
		}
		b.maxUnavailable = max(mu, 0)
	}
	return b, nil
}

// choose decides which of the SidecarSet's matched, active pods (views) to upgrade now.
//
// Candidates are the pods not yet updated whose difference is images only, that
// updateStrategy.selector (if any) selects, with no in-place update of their own workload
// running. A pod whose previous upgrade by this SidecarSet is unfinished is one: a rollout stuck
// on a bad image is rolled forward or back by the next image, and recording the containers it
// runs then is right, as a container not yet restarted still has the ID recorded before. Of
// them, in the order podorder.ForUpdate gives (least active first, then priorityStrategy and
// scatterStrategy), as many are taken as:
//   - the partition allows: after this pass at least partition pods stay not updated
//     (a not-upgradable pod is one of them: it does stay at its version);
//   - maxUnavailable allows. It bounds the pods this SidecarSet's own upgrades made
//     unavailable (podView.disrupted, see disruption.go), not every matched pod that is not
//     Ready: a candidate whose Ready condition is True is taken only while fewer than
//     maxUnavailable pods are disrupted, and then counts as one more; a candidate disrupted
//     already, or not Ready, is taken at no cost (its upgrade costs no availability). A not
//     Ready one that turned so in this very second waits for the next (recheck): taken now, its
//     not-readiness could not be told from one its upgrade caused.
func choose(ss *appsv1beta1.SidecarSet, views []podView, now time.Time) (choice, error) {
	out := choice{waiting: map[string]string{}}
	s := ss.Spec.UpdateStrategy
	if s.Type == appsv1beta1.NotUpdateSidecarSetStrategyType {
		return out, nil
	}
	selector := labels.Everything()
	if s.Selector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(s.Selector); err != nil {
			return out, fmt.Errorf("updateStrategy.selector: %w", err)
		}
	}
	var candidates []*corev1.Pod
	byPod := map[*corev1.Pod]podView{}
	notUpdated, disruptedPods := 0, 0
	for _, v := range views {
		byPod[v.pod] = v
		if v.disrupted {
			disruptedPods++
		}
		if v.updated {
			continue
		}
		notUpdated++
		if !selector.Matches(labels.Set(v.pod.Labels)) {
			continue
		}
		switch {
		case v.busy != "":
			out.waiting[v.pod.Namespace+"/"+v.pod.Name] = v.busy
		case !v.upgradable:
			out.notUpgradable = append(out.notUpgradable, v.pod)
		default:
			candidates = append(candidates, v.pod)
		}
	}
	if s.Paused || len(candidates) == 0 {
		return out, nil
	}
	b, err := budgetOf(s, len(views))
	if err != nil {
		return out, err
	}
	allowed := notUpdated - b.keep
	if allowed <= 0 {
		return out, nil
	}
	ordered, err := podorder.ForUpdate(candidates, s.PriorityStrategy, s.ScatterStrategy)
	if err != nil {
		return out, fmt.Errorf("updateStrategy: %w", err)
	}
	for _, pod := range ordered {
		if len(out.upgrade) >= allowed {
			break
		}
		v := byPod[pod]
		if ready, _, _ := readyCondition(pod); v.disrupted || !ready {
			if wait := unreadyTooRecent(pod, now); !v.disrupted && wait > 0 {
				out.recheck = durations.Shortest(out.recheck, wait)
				continue
			}
			out.upgrade = append(out.upgrade, pod)
			continue
		}
		if disruptedPods >= b.maxUnavailable {
			continue
		}
		disruptedPods++
		out.upgrade = append(out.upgrade, pod)
	}
	return out, nil
}
