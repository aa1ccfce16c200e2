package lifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Hooked reports whether ANY of the hook's labels (with its value) or finalizers is on the pod:
// a preDelete or inPlaceUpdate hook holds the pod while this is true. A nil hook, or one that
// names nothing, holds nothing (false), as in OpenKruise.
func Hooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil || pod == nil {
		return false
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; ok && got == v {
			return true
		}
	}
	return slices.ContainsFunc(hook.FinalizersHandler, func(f string) bool { return slices.Contains(pod.Finalizers, f) })
}

// AllHooked reports whether ALL of the hook's labels (with their values) and finalizers are on the
// pod: a preNormal hook lets its pod become Normal, and an Updated pod becomes Normal, only then.
// A nil hook is false, as in OpenKruise (whose callers treat "no hook" themselves, as Decide
// does); a hook that names nothing is true.
func AllHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil || pod == nil {
		return false
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			return false
		}
	}
	return true
}

// RestoreHook puts all of the hook's labels and finalizers on pod, a copy the caller owns; a nil
// hook changes nothing.
func RestoreHook(pod *corev1.Pod, hook *pub.LifecycleHook) {
	if hook == nil {
		return
	}
	if len(hook.LabelsHandler) > 0 && pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range hook.LabelsHandler {
		pod.Labels[k] = v
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			pod.Finalizers = append(pod.Finalizers, f)
		}
	}
}

// MarksNotReady reports whether the preDelete or inPlaceUpdate hook of lc has markPodNotReady:
// such a workload never takes back a pod from PreparingDelete (see WantKeep).
func MarksNotReady(lc *pub.Lifecycle) bool {
	return marksNotReady(preDelete(lc)) || marksNotReady(inPlaceUpdate(lc))
}

func marksNotReady(h *pub.LifecycleHook) bool { return h != nil && h.MarkPodNotReady }

// The hooks of a possibly nil Lifecycle.

func preDelete(lc *pub.Lifecycle) *pub.LifecycleHook {
	if lc == nil {
		return nil
	}
	return lc.PreDelete
}

func inPlaceUpdate(lc *pub.Lifecycle) *pub.LifecycleHook {
	if lc == nil {
		return nil
	}
	return lc.InPlaceUpdate
}

func preNormal(lc *pub.Lifecycle) *pub.LifecycleHook {
	if lc == nil {
		return nil
	}
	return lc.PreNormal
}
