package pub

// Keys of the pod label and annotation through which a workload controller walks a pod through its
// lifecycle, and through which a user's hook controller sees where the pod is.
const (
	// LifecycleStateKey is the pod label holding the pod's LifecycleStateType.
	LifecycleStateKey = "lifecycle.apps.kruise.io/state"
	// LifecycleTimestampKey is the pod annotation holding when the state last changed (RFC 3339).
	LifecycleTimestampKey = "lifecycle.apps.kruise.io/timestamp"
)

// LifecycleStateType is where a pod of a kruise workload is in its lifecycle.
type LifecycleStateType string

// The lifecycle states, in the order a pod usually passes through them.
const (
	// LifecycleStatePreparingNormal: created; waits for the preNormal hook (all of its labels and
	// finalizers present) before it counts as Normal.
	LifecycleStatePreparingNormal LifecycleStateType = "PreparingNormal"
	// LifecycleStateNormal: serving; nothing pending.
	LifecycleStateNormal LifecycleStateType = "Normal"
	// LifecycleStatePreparingUpdate: chosen for an in-place update; waits until the inPlaceUpdate
	// hook is released (none of its labels or finalizers left).
	LifecycleStatePreparingUpdate LifecycleStateType = "PreparingUpdate"
	// LifecycleStateUpdating: the in-place update is being applied.
	LifecycleStateUpdating LifecycleStateType = "Updating"
	// LifecycleStateUpdated: updated in place; waits for the inPlaceUpdate hook to be put back.
	LifecycleStateUpdated LifecycleStateType = "Updated"
	// LifecycleStatePreparingDelete: chosen for deletion; waits until the preDelete hook is
	// released before the pod is deleted.
	LifecycleStatePreparingDelete LifecycleStateType = "PreparingDelete"
)

// Lifecycle holds the hooks a workload runs its pods through.
type Lifecycle struct {
	// PreDelete holds a pod about to be deleted (scale in, recreate update) in PreparingDelete
	// while any of its labels or finalizers is on the pod.
	// +optional
	PreDelete *LifecycleHook `json:"preDelete,omitempty"`
	// InPlaceUpdate holds a pod about to be updated in place in PreparingUpdate while any of its
	// labels or finalizers is on the pod, and in Updated afterwards until they are all back.
	// +optional
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`
	// PreNormal holds a new pod in PreparingNormal until all of its labels and finalizers are on
	// the pod.
	// +optional
	PreNormal *LifecycleHook `json:"preNormal,omitempty"`
}

// LifecycleHook names the labels and finalizers through which a user's controller holds a pod in a
// lifecycle state.
type LifecycleHook struct {
	// LabelsHandler: pod labels (key and value) that make the hook.
	// +optional
	LabelsHandler map[string]string `json:"labelsHandler,omitempty"`
	// FinalizersHandler: pod finalizers that make the hook.
	// +optional
	FinalizersHandler []string `json:"finalizersHandler,omitempty"`
	// MarkPodNotReady sets the pod's KruisePodReady condition False while the pod waits on this
	// hook (PreparingDelete, PreparingUpdate), so that Services stop sending it traffic first. The
	// pod needs the KruisePodReady readiness gate for it to count.
	// +optional
	MarkPodNotReady bool `json:"markPodNotReady,omitempty"`
}
