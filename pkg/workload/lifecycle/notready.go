package lifecycle

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
)

// Keys of the lifecycle's holders of the KruisePodReady condition, as OpenKruise writes them, so
// that a pod held by OpenKruise is released by kruise after an upgrade and the other way round.
const (
	PreDeleteHolderKey = "preDeleteHook"
	PreUpdateHolderKey = "preUpdateHook"
)

// ReadinessCondition returns the KruisePodReady condition the pod should have in state under lc,
// and whether it differs from the pod's. The condition is shared (pkg/contract/readinessgate): the
// lifecycle adds and drops only its own holders, so a ContainerRecreateRequest holding the same
// pod keeps it not-ready until it is done too.
//
//   - PreparingDelete holds the pod (key preDeleteHook) when preDelete has markPodNotReady;
//   - PreparingUpdate holds it (key preUpdateHook) when inPlaceUpdate has markPodNotReady;
//   - PreparingNormal, Normal and Updated release every lifecycle holder;
//   - Updating, "" and unknown states change nothing: an update keeps its hold until it is
//     done, and a pod sent from Updating to PreparingDelete stays out of its Services.
//
// A pod without the KruisePodReady readiness gate is left alone: the condition would not count.
func ReadinessCondition(pod *corev1.Pod, lc *pub.Lifecycle, state pub.LifecycleStateType, now metav1.Time) (corev1.PodCondition, bool) {
	if !readinessgate.Declared(pod) {
		return corev1.PodCondition{}, false
	}
	switch state {
	case pub.LifecycleStatePreparingDelete:
		if marksNotReady(preDelete(lc)) {
			return readinessgate.WithHolder(pod, readinessgate.LifecycleHolder(PreDeleteHolderKey), now)
		}
	case pub.LifecycleStatePreparingUpdate:
		if marksNotReady(inPlaceUpdate(lc)) {
			return readinessgate.WithHolder(pod, readinessgate.LifecycleHolder(PreUpdateHolderKey), now)
		}
	case pub.LifecycleStatePreparingNormal, pub.LifecycleStateNormal, pub.LifecycleStateUpdated:
		return readinessgate.WithoutHolders(pod, isLifecycleHolder, now)
	}
	return corev1.PodCondition{}, false
}

func isLifecycleHolder(h readinessgate.Holder) bool {
	return h.UserAgent == readinessgate.LifecycleUserAgent
}

// ReadinessPatch is the strategic merge patch of the pod's status (readinessgate.StatusPatch:
// the condition alone, with the pod's resourceVersion as precondition) that gives the pod the
// condition ReadinessCondition says, or nil when nothing changes. Write it before the state
// when a decision moves the pod into PreparingDelete or PreparingUpdate, so the pod leaves its
// Services before the hook's owner sees the state; on a refresh, call it with StateOf(pod) to
// mend a write that was lost.
func ReadinessPatch(pod *corev1.Pod, lc *pub.Lifecycle, state pub.LifecycleStateType, clk clock.PassiveClock) ([]byte, error) {
	cond, changed := ReadinessCondition(pod, lc, state, metav1.NewTime(clk.Now().Truncate(time.Second)))
	if !changed {
		return nil, nil
	}
	data, err := readinessgate.StatusPatch(pod, cond)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s patch: %w", cond.Type, err)
	}
	return data, nil
}
