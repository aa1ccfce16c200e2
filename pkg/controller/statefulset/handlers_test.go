package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/workload/expectations"
)

func TestPodHandlersObserveExpectations(t *testing.T) {
	set := statefulSet(2, "app:1")
	rev := revisionOf(t, set, 1)
	f := newFixture(t, set)
	key := testNS + "/web"
	ctx := testContext(t)

	pod := runningPod(t, set, rev, 1)
	f.ctrl.expect.Expect(key, expectations.Create, expectations.Pods, pod.Name)
	ok, _ := f.ctrl.expect.Satisfied(ctx, key)
	assert.False(t, ok)
	f.ctrl.podEvents.Handler().OnAdd(pod, false)
	ok, _ = f.ctrl.expect.Satisfied(ctx, key)
	assert.True(t, ok, "a created pod seen")

	f.ctrl.expect.Expect(key, expectations.Delete, expectations.Pods, pod.Name)
	terminating := pod.DeepCopy()
	terminating.ResourceVersion = "2"
	now := metav1.NewTime(t0)
	terminating.DeletionTimestamp = &now
	f.ctrl.podEvents.Handler().OnUpdate(pod, terminating)
	ok, _ = f.ctrl.expect.Satisfied(ctx, key)
	assert.True(t, ok, "a deletion is seen once the pod is terminating")

	// A pod of another kind's StatefulSet (group apps) is not ours.
	builtin := runningPod(t, set, rev, 0)
	builtin.OwnerReferences[0].APIVersion = "apps/v1"
	_, owned := f.ctrl.podEvents.OwnerKey(builtin)
	assert.False(t, owned, "the built-in StatefulSet's pods are not this controller's")
}

func TestClaimEventsFindTheirSet(t *testing.T) {
	set := statefulSet(2, "app:1", withClaims)
	f := newFixture(t, set)
	claim := &metav1.ObjectMeta{Name: "data-web-3", Namespace: testNS}
	assert.Equal(t, []string{testNS + "/web"}, f.ctrl.claimSets(claim))
	assert.Empty(t, f.ctrl.claimSets(&metav1.ObjectMeta{Name: "data-web-x", Namespace: testNS}))
	assert.Empty(t, f.ctrl.claimSets(&metav1.ObjectMeta{Name: "logs-web-3", Namespace: testNS}))
}
