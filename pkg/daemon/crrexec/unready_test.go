package crrexec

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// gated declares the KruisePodReady readiness gate.
var gated = gen.AddPodReadinessGate(appsv1alpha1.KruisePodReadyConditionType)

// kruiseReady sets the pod's KruisePodReady condition, last changed at since.
func kruiseReady(status corev1.ConditionStatus, since time.Time) gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{
		Type: appsv1alpha1.KruisePodReadyConditionType, Status: status, LastTransitionTime: metav1.NewTime(since),
	})
}

func countEvents(events []string, reason string) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			n++
		}
	}
	return n
}

// The first kill waits until the pod shows KruisePodReady=False and the
// grace has passed since it became False; it is requeued for exactly the
// rest, and nothing is stopped or marked before.
func TestUnreadyGraceWaitsForFalseThenGrace(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main", "sidecar"), gen.SetCRRUnreadyGracePeriodSeconds(5))
	f := newFixture(t, runningPod(gated, kruiseReady(corev1.ConditionTrue, tNow.Add(-time.Hour))), crr)

	assert.Zero(t, f.sync(t), "still ready: wait for the pod update, no timer")
	assert.Empty(t, f.rt.calls())

	f.setPod(t, runningPod(gated, kruiseReady(corev1.ConditionFalse, tNow.Add(-2*time.Second))))
	assert.Equal(t, 3*time.Second, f.sync(t), "requeued for the rest of the grace")
	assert.Empty(t, f.rt.calls())
	assert.Equal(t, map[string]string{"main": "Pending", "sidecar": "Pending"}, states(f.get(t, "r")))

	f.clock.Step(3 * time.Second)
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID, "stop " + sideID}, f.rt.calls(), "after the grace every container is stopped, the later ones without waiting again")
	assert.Zero(t, countEvents(f.events(), ReasonUnreadyGateMissing))
}

// Only the first kill waits: with orderedRecreate the second container is
// stopped as soon as the first is recreated, even if the pod is ready again.
func TestUnreadyGraceOnlyFirstKillWaits(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main", "sidecar"), gen.SetCRRUnreadyGracePeriodSeconds(5))
	crr.Spec.Strategy.OrderedRecreate = true
	f := newFixture(t, runningPod(gated, kruiseReady(corev1.ConditionFalse, tNow.Add(-5*time.Second))), crr)
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())

	f.rt.restart("main", "ccc", 1)
	f.setPod(t, runningPod(gated, kruiseReady(corev1.ConditionTrue, tNow), gen.SetPodContainerStatus(runningStatus("main", "containerd://ccc", 1, true, tNow))))
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID, "stop " + sideID}, f.rt.calls())
}

// A restarted daemon that finds a kill begun does not wait again.
func TestUnreadyGraceNotAfterKillBegan(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main", "sidecar"), gen.SetCRRUnreadyGracePeriodSeconds(30))
	crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
	crr.Status.ContainerRecreateStates = []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{
		{Name: "main", Phase: appsv1alpha1.ContainerRecreateRequestRecreating, IsKilled: true},
		{Name: "sidecar", Phase: appsv1alpha1.ContainerRecreateRequestPending},
	}
	f := newFixture(t, runningPod(gated, kruiseReady(corev1.ConditionTrue, tNow)), crr)
	f.rt.containers[0].State = cri.ContainerExited
	f.sync(t)
	assert.Equal(t, []string{"stop " + sideID}, f.rt.calls())
}

// The controller records when the unready period began; a pod cache showing
// an older False (readiness restored and lost since) is not trusted.
func TestUnreadyGraceStalePodCache(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main"), gen.SetCRRUnreadyGracePeriodSeconds(5))
	crr.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: tNow.Add(-time.Second).Format(time.RFC3339)}
	f := newFixture(t, runningPod(gated, kruiseReady(corev1.ConditionFalse, tNow.Add(-time.Hour))), crr)
	assert.Zero(t, f.sync(t))
	assert.Empty(t, f.rt.calls())

	f.setPod(t, runningPod(gated, kruiseReady(corev1.ConditionFalse, tNow.Add(-time.Second))))
	assert.Equal(t, 4*time.Second, f.sync(t))
	f.clock.Step(4 * time.Second)
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
}

// A pod without the readiness gate cannot be made not-ready: one Event per
// CRR, and the containers are stopped at once.
func TestUnreadyGateMissing(t *testing.T) {
	f := newFixture(t, runningPod(), gen.CRRFrom(newCRR("r", time.Minute, "main", "sidecar"), gen.SetCRRUnreadyGracePeriodSeconds(5)))
	assert.Zero(t, f.sync(t))
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID, "stop " + sideID}, f.rt.calls(), "no wait")
	events := f.events()
	assert.Equal(t, 1, countEvents(events, ReasonUnreadyGateMissing), "%v", events)
	assert.Contains(t, events, "Warning UnreadyGateMissing pod does not declare readiness gate KruisePodReady; recreating without an unready period")
}

// Without unreadyGracePeriodSeconds a gated pod's readiness is not waited for.
func TestNoUnreadyGraceNoWait(t *testing.T) {
	f := newFixture(t, runningPod(gated, kruiseReady(corev1.ConditionTrue, tNow)), newCRR("r", time.Minute, "main"))
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
	assert.Zero(t, countEvents(f.events(), ReasonUnreadyGateMissing))
}
