package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	crrHeld     = `[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`
	deleteHeld  = `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	updateHeld  = `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`
	crrAndDel   = `[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	delAndCRR   = `[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`
	updAndDel   = `[{"userAgent":"Lifecycle","key":"preUpdateHook"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	releasedMsg = "[]"
)

var earlier = metav1.NewTime(now.Add(-time.Minute))

// gated is a pod in state with the KruisePodReady readiness gate, and the condition when status
// is not empty.
func gated(state pub.LifecycleStateType, status corev1.ConditionStatus, reason, message string) *corev1.Pod {
	p := podIn(state, gen.AddPodReadinessGate(pub.KruisePodReady), gen.SetPodResourceVersion("7"))
	if status != "" {
		p = gen.PodFrom(p, gen.SetPodCondition(corev1.PodCondition{
			Type: pub.KruisePodReady, Status: status, Reason: reason, Message: message, LastTransitionTime: earlier,
		}))
	}
	return p
}

func TestReadinessCondition(t *testing.T) {
	marking := &pub.Lifecycle{PreDelete: markingPreDelete, InPlaceUpdate: markingInPlace}
	tests := []struct {
		name        string
		lc          *pub.Lifecycle
		pod         *corev1.Pod
		state       pub.LifecycleStateType
		wantChanged bool
		want        corev1.PodCondition // checked when changed
	}{
		{name: "PreparingDelete, marking: held", lc: marking, pod: gated("Normal", "", "", ""), state: "PreparingDelete",
			wantChanged: true, want: cond(corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, deleteHeld, now)},
		{name: "PreparingUpdate, marking: held", lc: marking, pod: gated("Normal", corev1.ConditionTrue, readinessgate.ReasonReleased, releasedMsg), state: "PreparingUpdate",
			wantChanged: true, want: cond(corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updateHeld, now)},
		{name: "PreparingDelete, hook not marking: nothing", lc: allHooks, pod: gated("Normal", "", "", ""), state: "PreparingDelete"},
		{name: "PreparingUpdate, only preDelete marks: nothing", lc: &pub.Lifecycle{PreDelete: markingPreDelete}, pod: gated("Normal", "", "", ""), state: "PreparingUpdate"},
		{name: "no readiness gate: nothing", lc: marking, pod: podIn("Normal"), state: "PreparingDelete"},
		{name: "already held: nothing", lc: marking, pod: gated("PreparingDelete", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, deleteHeld), state: "PreparingDelete"},
		{name: "held by a CRR: both hold it, since the CRR's transition", lc: marking,
			pod: gated("Normal", corev1.ConditionFalse, readinessgate.ReasonHeld, crrHeld), state: "PreparingDelete",
			wantChanged: true, want: cond(corev1.ConditionFalse, readinessgate.ReasonHeld, crrAndDel, earlier.Time)},
		{name: "from Updating to PreparingDelete: the update's hold stays, the delete's joins", lc: marking,
			pod: gated("Updating", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updateHeld), state: "PreparingDelete",
			wantChanged: true, want: cond(corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updAndDel, earlier.Time)},
		{name: "Updating keeps the hold", lc: marking, pod: gated("PreparingUpdate", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updateHeld), state: "Updating"},
		{name: "Updated releases", lc: marking, pod: gated("Updating", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updateHeld), state: "Updated",
			wantChanged: true, want: cond(corev1.ConditionTrue, readinessgate.ReasonReleased, releasedMsg, now)},
		{name: "Normal releases", lc: marking, pod: gated("Updated", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updAndDel), state: "Normal",
			wantChanged: true, want: cond(corev1.ConditionTrue, readinessgate.ReasonReleased, releasedMsg, now)},
		{name: "released even when the workload no longer marks", lc: nil, pod: gated("Updated", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updateHeld), state: "Normal",
			wantChanged: true, want: cond(corev1.ConditionTrue, readinessgate.ReasonReleased, releasedMsg, now)},
		{name: "PreparingNormal releases ours, a CRR keeps it not-ready", lc: marking,
			pod: gated("PreparingDelete", corev1.ConditionFalse, readinessgate.ReasonHeld, delAndCRR), state: "PreparingNormal",
			wantChanged: true, want: cond(corev1.ConditionFalse, readinessgate.ReasonHeld, crrHeld, earlier.Time)},
		{name: "Normal leaves a CRR's hold alone", lc: marking, pod: gated("Normal", corev1.ConditionFalse, readinessgate.ReasonHeld, crrHeld), state: "Normal"},
		{name: "Normal leaves someone else's False alone", lc: marking, pod: gated("Normal", corev1.ConditionFalse, "Maintenance", "node drain"), state: "Normal"},
		{name: "unknown state: nothing", lc: marking, pod: gated("Bogus", corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, deleteHeld), state: "Bogus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := ReadinessCondition(tc.pod, tc.lc, tc.state, metav1.NewTime(now))
			require.Equal(t, tc.wantChanged, changed, "changed (got %+v)", got)
			if tc.wantChanged {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func cond(status corev1.ConditionStatus, reason, message string, at time.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: pub.KruisePodReady, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at)}
}

func TestReadinessPatch(t *testing.T) {
	lc := &pub.Lifecycle{PreDelete: markingPreDelete}
	patch, err := ReadinessPatch(gated("Normal", "", "", ""), lc, pub.LifecycleStatePreparingDelete, clk)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[{"type":"KruisePodReady","status":"False",`+
		`"reason":"LifecycleHookHeld","message":"[{\"userAgent\":\"Lifecycle\",\"key\":\"preDeleteHook\"}]","lastProbeTime":null,`+
		`"lastTransitionTime":"`+stamp+`"}]}}`, string(patch))

	patch, err = ReadinessPatch(gated("Normal", "", "", ""), lc, pub.LifecycleStateNormal, clk)
	require.NoError(t, err)
	assert.Nil(t, patch, "nothing to write")
}

// A CRR and a lifecycle hook hold the same pod; each release leaves the other's hold in place.
func TestReadinessCoexistsWithACRR(t *testing.T) {
	lc := &pub.Lifecycle{InPlaceUpdate: markingInPlace}
	pod := gated("Normal", "", "", "")
	setCond := func(c corev1.PodCondition) { pod = gen.PodFrom(pod, gen.SetPodCondition(c)) }
	crr := readinessgate.CRRHolder("default", "restart-web")

	c, changed := readinessgate.WithHolder(pod, crr, earlier)
	require.True(t, changed)
	setCond(c)
	c, changed = ReadinessCondition(pod, lc, pub.LifecycleStatePreparingUpdate, metav1.NewTime(now))
	require.True(t, changed)
	setCond(c)
	assert.Equal(t, cond(corev1.ConditionFalse, readinessgate.ReasonHeld,
		`[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`, earlier.Time), c)

	// The CRR finishes first: the hook still holds the pod.
	c, changed = readinessgate.WithoutHolders(pod, func(h readinessgate.Holder) bool { return h == crr }, metav1.NewTime(now))
	require.True(t, changed)
	setCond(c)
	assert.Equal(t, cond(corev1.ConditionFalse, readinessgate.ReasonLifecycleHeld, updateHeld, earlier.Time), c)

	// The update is done: ready again.
	c, changed = ReadinessCondition(pod, lc, pub.LifecycleStateUpdated, metav1.NewTime(now))
	require.True(t, changed)
	assert.Equal(t, cond(corev1.ConditionTrue, readinessgate.ReasonReleased, releasedMsg, now), c)
}
