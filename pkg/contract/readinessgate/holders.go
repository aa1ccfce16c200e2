package readinessgate

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// A pod's KruisePodReady condition is shared: several users (each CRR with
// an unready grace period, each lifecycle hook with markPodNotReady) may
// hold the pod not-ready at once. As in OpenKruise, the condition's message
// is the JSON list of holders,
// [{"userAgent":"ContainerRecreateRequest","key":"<ns>/<name>"},{"userAgent":"Lifecycle","key":"preDeleteHook"}];
// the condition is False while the list is not empty. Each user adds and
// removes only its own entry, so none loses another's.

// Holder is one user holding a pod not-ready.
type Holder struct {
	UserAgent string `json:"userAgent"`
	Key       string `json:"key"`
}

// CRRUserAgent is the userAgent of a ContainerRecreateRequest's entry; its
// key is "<namespace>/<name>" of the request.
const CRRUserAgent = "ContainerRecreateRequest"

// LifecycleUserAgent is the userAgent of a lifecycle hook's entry (a hook
// with markPodNotReady); its key names the hook, as OpenKruise writes it:
// "preDeleteHook" or "preUpdateHook". The pod is the condition's own, so
// the key needs no namespace.
const LifecycleUserAgent = "Lifecycle"

// Reasons kruise writes on the condition.
const (
	// ReasonHeld: False, with at least one ContainerRecreateRequest holder.
	ReasonHeld = "ContainerRecreating"
	// ReasonLifecycleHeld: False, held by lifecycle hooks only.
	ReasonLifecycleHeld = "LifecycleHookHeld"
	// ReasonReleased: True again after the last holder left.
	ReasonReleased = "ContainerRecreateFinished"
)

// legacyPrefix and legacySuffix frame the prose message earlier kruise
// releases wrote on a False condition ("ContainerRecreateRequest <name> is
// recreating containers"), read so that an upgrade releases such pods too.
const (
	legacyPrefix = "ContainerRecreateRequest "
	legacySuffix = " is recreating containers"
)

// CRRHolder is the entry of the request namespace/name.
func CRRHolder(namespace, name string) Holder {
	return Holder{UserAgent: CRRUserAgent, Key: namespace + "/" + name}
}

// LifecycleHolder is the entry of the lifecycle hook key.
func LifecycleHolder(key string) Holder {
	return Holder{UserAgent: LifecycleUserAgent, Key: key}
}

// isHeldReason reports a reason kruise writes on a False condition.
func isHeldReason(reason string) bool {
	return reason == ReasonHeld || reason == ReasonLifecycleHeld
}

// Holders lists the holders recorded on the pod's condition (none when it
// has no condition, or a True one). A message that is not a holder list is
// read as the prose of an earlier kruise release when it is one, else as no
// holder at all.
func Holders(pod *corev1.Pod) []Holder {
	hs, _ := parse(Condition(pod), pod.Namespace)
	return hs
}

// parse reads the holders of a False condition, and whether its message is
// kruise's (a holder list, or an earlier release's prose).
func parse(c *corev1.PodCondition, namespace string) ([]Holder, bool) {
	if c == nil || c.Status != corev1.ConditionFalse {
		return nil, false
	}
	var hs []Holder
	if err := json.Unmarshal([]byte(c.Message), &hs); err == nil {
		return slices.DeleteFunc(hs, func(h Holder) bool { return h.Key == "" }), true
	}
	if name, ok := strings.CutPrefix(c.Message, legacyPrefix); ok {
		if name, ok = strings.CutSuffix(name, legacySuffix); ok && name != "" {
			return []Holder{CRRHolder(namespace, name)}, true
		}
	}
	return nil, false
}

// Held reports whether h holds the pod not-ready.
func Held(pod *corev1.Pod, h Holder) bool {
	return slices.Contains(Holders(pod), h)
}

// WithHolder returns the condition that adds h to the pod's holders, and
// whether it differs from the pod's. A condition already False keeps its
// lastTransitionTime: the pod has been not-ready since then. A False
// condition someone else wrote in another form is left as it is (false):
// the pod is not-ready already, and rewriting it would lose their message
// and let the last kruise holder set it True under them.
func WithHolder(pod *corev1.Pod, h Holder, now metav1.Time) (corev1.PodCondition, bool) {
	c := Condition(pod)
	hs, ours := parse(c, pod.Namespace)
	if c != nil && c.Status == corev1.ConditionFalse && !ours && !isHeldReason(c.Reason) {
		return *c, false
	}
	if slices.Contains(hs, h) && isHeldFormat(pod) {
		return *c, false
	}
	if !slices.Contains(hs, h) {
		hs = append(hs, h)
	}
	return holdersCondition(pod, hs, now), true
}

// WithoutHolders returns the condition that drops from the pod's holders
// those drop selects, and whether that changes anything. With none left the
// condition is True.
func WithoutHolders(pod *corev1.Pod, drop func(Holder) bool, now metav1.Time) (corev1.PodCondition, bool) {
	hs := Holders(pod)
	kept := slices.DeleteFunc(slices.Clone(hs), drop)
	if len(kept) == len(hs) && (len(hs) > 0 || !heldWithoutHolders(pod)) {
		return corev1.PodCondition{}, false
	}
	return holdersCondition(pod, kept, now), true
}

// heldWithoutHolders reports a False condition of kruise's (its reason)
// whose message names no holder: nothing will ever release it otherwise.
func heldWithoutHolders(pod *corev1.Pod) bool {
	c := Condition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && isHeldReason(c.Reason) && len(Holders(pod)) == 0
}

// isHeldFormat reports whether the condition is already written as a
// holder list (not the prose of an earlier release).
func isHeldFormat(pod *corev1.Pod) bool {
	var hs []Holder
	c := Condition(pod)
	return c != nil && json.Unmarshal([]byte(c.Message), &hs) == nil
}

func holdersCondition(pod *corev1.Pod, hs []Holder, now metav1.Time) corev1.PodCondition {
	if hs == nil {
		hs = []Holder{}
	}
	msg, _ := json.Marshal(hs) // strings only: cannot fail
	cond := corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Message: string(msg), LastTransitionTime: now}
	switch {
	case slices.ContainsFunc(hs, func(h Holder) bool { return h.UserAgent != LifecycleUserAgent }):
		cond.Status, cond.Reason = corev1.ConditionFalse, ReasonHeld
	case len(hs) > 0:
		cond.Status, cond.Reason = corev1.ConditionFalse, ReasonLifecycleHeld
	default:
		cond.Status, cond.Reason = corev1.ConditionTrue, ReasonReleased
	}
	if cur := Condition(pod); cur != nil && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	return cond
}

// StatusPatch is the strategic merge patch of a pod's status that writes
// cond alone (conditions merge by type) and carries the pod's
// resourceVersion as a precondition: a pod changed since it was read fails
// with a conflict, and the writer decides again.
func StatusPatch(pod *corev1.Pod, cond corev1.PodCondition) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
}
