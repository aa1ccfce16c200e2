package readinessgate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func podWith(status corev1.ConditionStatus, reason, message string) *corev1.Pod {
	return gen.Pod("", gen.SetPodNamespace("ns"), gen.SetPodCondition(corev1.PodCondition{
		Type: "KruisePodReady", Status: status, Reason: reason, Message: message, LastTransitionTime: t0,
	}))
}

func TestHolders(t *testing.T) {
	a, b := CRRHolder("ns", "a"), Holder{UserAgent: "Lifecycle", Key: "ns/web"}
	assert.Equal(t, []Holder{a, b}, Holders(podWith(corev1.ConditionFalse, "", `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"},{"userAgent":"Lifecycle","key":"ns/web"}]`)))
	assert.Equal(t, []Holder{a}, Holders(podWith(corev1.ConditionFalse, ReasonHeld, "ContainerRecreateRequest a is recreating containers")), "an earlier release's prose")
	assert.Empty(t, Holders(podWith(corev1.ConditionTrue, "", `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`)), "a True condition holds nothing")
	assert.Empty(t, Holders(podWith(corev1.ConditionFalse, "Maintenance", "drain")))
	assert.Empty(t, Holders(&corev1.Pod{}))
	assert.True(t, Held(podWith(corev1.ConditionFalse, "", `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`), a))
}

func TestWithHolder(t *testing.T) {
	a, b := CRRHolder("ns", "a"), CRRHolder("ns", "b")
	// No condition: False, now.
	c, changed := WithHolder(&corev1.Pod{}, a, t1)
	assert.True(t, changed)
	assert.Equal(t, corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionFalse, Reason: ReasonHeld,
		Message: `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`, LastTransitionTime: t1}, c)
	// Held by a: b joins, the transition time stays.
	c, changed = WithHolder(podWith(corev1.ConditionFalse, ReasonHeld, `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`), b, t1)
	assert.True(t, changed)
	assert.Equal(t, `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"},{"userAgent":"ContainerRecreateRequest","key":"ns/b"}]`, c.Message)
	assert.Equal(t, t0, c.LastTransitionTime)
	// Already held by a.
	_, changed = WithHolder(podWith(corev1.ConditionFalse, ReasonHeld, `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`), a, t1)
	assert.False(t, changed)
	// An earlier release's prose is rewritten as a list.
	c, changed = WithHolder(podWith(corev1.ConditionFalse, ReasonHeld, "ContainerRecreateRequest a is recreating containers"), a, t1)
	assert.True(t, changed)
	assert.Equal(t, `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`, c.Message)
	// Someone else's False is left alone.
	_, changed = WithHolder(podWith(corev1.ConditionFalse, "Maintenance", "drain"), a, t1)
	assert.False(t, changed)
	// True (e.g. the gate's default): False from now.
	c, changed = WithHolder(podWith(corev1.ConditionTrue, "GateDeclared", "prose"), a, t1)
	assert.True(t, changed)
	assert.Equal(t, corev1.ConditionFalse, c.Status)
	assert.Equal(t, t1, c.LastTransitionTime)
}

func TestWithoutHolders(t *testing.T) {
	isA := func(h Holder) bool { return h == CRRHolder("ns", "a") }
	c, changed := WithoutHolders(podWith(corev1.ConditionFalse, ReasonHeld, `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"},{"userAgent":"Lifecycle","key":"ns/web"}]`), isA, t1)
	assert.True(t, changed)
	assert.Equal(t, corev1.ConditionFalse, c.Status, "another holder keeps it")
	assert.Equal(t, `[{"userAgent":"Lifecycle","key":"ns/web"}]`, c.Message)
	assert.Equal(t, t0, c.LastTransitionTime)

	c, changed = WithoutHolders(podWith(corev1.ConditionFalse, ReasonHeld, `[{"userAgent":"ContainerRecreateRequest","key":"ns/a"}]`), isA, t1)
	assert.True(t, changed)
	assert.Equal(t, corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionTrue, Reason: ReasonReleased, Message: "[]", LastTransitionTime: t1}, c)

	_, changed = WithoutHolders(podWith(corev1.ConditionFalse, ReasonHeld, `[{"userAgent":"ContainerRecreateRequest","key":"ns/b"}]`), isA, t1)
	assert.False(t, changed, "not a's to release")
	_, changed = WithoutHolders(podWith(corev1.ConditionFalse, "Maintenance", "drain"), isA, t1)
	assert.False(t, changed, "someone else's")
	c, changed = WithoutHolders(podWith(corev1.ConditionFalse, ReasonHeld, "garbage"), isA, t1)
	assert.True(t, changed, "kruise's, naming no holder: nothing else would release it")
	assert.Equal(t, corev1.ConditionTrue, c.Status)
}

func TestLifecycleHolderReason(t *testing.T) {
	life, crr := LifecycleHolder("preDeleteHook"), CRRHolder("ns", "a")
	assert.Equal(t, Holder{UserAgent: "Lifecycle", Key: "preDeleteHook"}, life)

	c, changed := WithHolder(&corev1.Pod{}, life, t1)
	assert.True(t, changed)
	assert.Equal(t, corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionFalse, Reason: ReasonLifecycleHeld,
		Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, LastTransitionTime: t1}, c, "a lifecycle hook alone does not claim a container recreate")

	held := podWith(corev1.ConditionFalse, ReasonLifecycleHeld, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`)
	c, changed = WithHolder(held, crr, t1)
	assert.True(t, changed)
	assert.Equal(t, ReasonHeld, c.Reason, "a CRR among the holders names the reason")
	assert.Equal(t, t0, c.LastTransitionTime)

	c, changed = WithoutHolders(podWith(corev1.ConditionFalse, ReasonLifecycleHeld, "[]"), func(Holder) bool { return false }, t1)
	assert.True(t, changed, "held by a lifecycle reason with no holder named: released")
	assert.Equal(t, corev1.ConditionTrue, c.Status)

	_, changed = WithHolder(podWith(corev1.ConditionFalse, ReasonLifecycleHeld, "not a list"), crr, t1)
	assert.True(t, changed, "kruise's reason: joined, not treated as someone else's")
}
