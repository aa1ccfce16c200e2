package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestInjectReadinessGateIsIdempotent(t *testing.T) {
	tpl := gen.PodTemplate(gen.AddPodReadinessGate(pub.KruisePodReady))
	assert.True(t, InjectReadinessGate(tpl))
	assert.False(t, InjectReadinessGate(tpl))
	assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReady}, {ConditionType: pub.InPlaceUpdateReady}}, tpl.Spec.ReadinessGates)

	assert.True(t, DeclaresReadinessGate(&corev1.Pod{Spec: tpl.Spec}))
	assert.False(t, DeclaresReadinessGate(gen.Pod("web", gen.AddPodReadinessGate(pub.KruisePodReady))))
}

func TestNotReadyStatusPatch(t *testing.T) {
	pod := gen.Pod("web", gen.SetPodResourceVersion("7"),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	// A grace period follows: a message of kruise's own, so that the kubelet syncs the pod.
	patch, err := NotReadyStatusPatch(pod, t0, false)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"False","reason":"StartInPlaceUpdate","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"},
		{"type":"Ready","status":"False","reason":"ReadinessGatesNotReady","message":"readiness gate InPlaceUpdateReady is False","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"}]}}`,
		string(patch))

	// The spec update follows at once: the kubelet's own message, every gate that is not True
	// in the pod's order, so that the kubelet does not sync for the patch.
	pod = gen.Pod("web", gen.SetPodResourceVersion("7"),
		gen.AddPodReadinessGate(pub.KruisePodReady), gen.AddPodReadinessGate("example.com/lb"), gen.AddPodReadinessGate(pub.InPlaceUpdateReady),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.KruisePodReady, Status: corev1.ConditionTrue}),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	patch, err = NotReadyStatusPatch(pod, t0, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"False","reason":"StartInPlaceUpdate","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"},
		{"type":"Ready","status":"False","reason":"ReadinessGatesNotReady","message":"corresponding condition of pod readiness gate \"example.com/lb\" does not exist., the status of pod readiness gate \"InPlaceUpdateReady\" is not \"True\", but False","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"}]}}`,
		string(patch))

	// Already not ready: Ready is left to the kubelet, and the transition time is kept.
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	pod = gen.Pod("web", gen.SetPodResourceVersion("8"),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, LastTransitionTime: earlier}))
	patch, err = NotReadyStatusPatch(pod, t0, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"8"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"False","reason":"StartInPlaceUpdate","lastProbeTime":null,"lastTransitionTime":"2026-07-01T09:00:00Z"}]}}`,
		string(patch))
}

func TestRestateNotReadyStatusPatch(t *testing.T) {
	// The kubelet wrote back Ready=True during the update: Ready=False again with kruise's
	// message (the kubelet syncs for it), the gate as it is.
	earlier := metav1.NewTime(t0.Add(-time.Second))
	pod := gen.Pod("web", gen.SetPodResourceVersion("11"),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: ReasonStartInPlaceUpdate, LastTransitionTime: earlier}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier}))
	patch, err := RestateNotReadyStatusPatch(pod, t0)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"11"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"False","reason":"StartInPlaceUpdate","lastProbeTime":null,"lastTransitionTime":"2026-07-01T09:59:59Z"},
		{"type":"Ready","status":"False","reason":"ReadinessGatesNotReady","message":"readiness gate InPlaceUpdateReady is False","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"}]}}`,
		string(patch))

	_, err = RestateNotReadyStatusPatch(gen.Pod("web"), t0)
	assert.Error(t, err)
}

func TestReadyStatusPatch(t *testing.T) {
	pod := gen.Pod("web", gen.SetPodResourceVersion("9"),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}))
	patch, err := ReadyStatusPatch(pod, t0)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"9"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"}]}}`,
		string(patch))
	assert.Equal(t, corev1.ConditionFalse, Condition(pod).Status)
	assert.Nil(t, Condition(gen.Pod("web")))
}

func TestReleaseThenReadyStatusPatch(t *testing.T) {
	pod := gen.Pod("web", gen.SetPodResourceVersion("9"), gen.SetPodGeneration(4, 4),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: ReasonStartInPlaceUpdate}))
	patch, err := ReleaseStatusPatch(pod, t0)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"9"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"True","reason":"ContainersRestarting","message":"the kubelet is replacing the updated containers (pod generation 4); Ready follows their readiness","lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"}]}}`,
		string(patch))

	// Done: the reason and message the release wrote are removed, the transition time kept.
	released := gen.Pod("web", gen.SetPodResourceVersion("10"), gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady,
		Status: corev1.ConditionTrue, Reason: pub.InPlaceUpdateRestartingReason, Message: "m", LastTransitionTime: metav1.NewTime(t0)}))
	patch, err = ReadyStatusPatch(released, t0.Add(time.Second))
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"10"},"status":{"conditions":[
		{"type":"InPlaceUpdateReady","status":"True","reason":null,"message":null,"lastProbeTime":null,"lastTransitionTime":"2026-07-01T10:00:00Z"}]}}`,
		string(patch))
}
