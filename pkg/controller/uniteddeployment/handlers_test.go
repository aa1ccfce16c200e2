package uniteddeployment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func drain(f *fixture) []string {
	var keys []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(k)
		f.ctrl.queue.Forget(k)
		keys = append(keys, k)
	}
	return keys
}

func TestHandlersQueueOnlyWhatChangesADecision(t *testing.T) {
	f := newFixture(t, newUD(kindCloneSet, 3))
	f.sync()
	f.runCloneSets("")
	f.sync()
	ud := f.ud()

	// Our own status write: nothing.
	next := ud.DeepCopy()
	next.Status.ReadyReplicas++
	next.ResourceVersion = "99"
	udUpdate := func(old, cur *appsv1alpha1.UnitedDeployment) bool { return udChanged(old, cur) }
	assert.False(t, udUpdate(ud, next))
	next.Generation++
	assert.True(t, udUpdate(ud, next))

	// A CloneSet's status write that changes nothing the controller reads: nothing; a change
	// of its ready pods: the UnitedDeployment.
	cs := f.cloneSets()["a"]
	noise := cs.DeepCopy()
	noise.ResourceVersion = "100"
	noise.Status.ObservedGeneration++
	noise.Status.AvailableReplicas++
	assert.Equal(t, workloadRead(cs), workloadRead(noise))
	ready := cs.DeepCopy()
	ready.Status.ReadyReplicas--
	assert.NotEqual(t, workloadRead(cs), workloadRead(ready))
	f.ctrl.workloadChanged(ready)
	assert.Equal(t, []string{ns + "/web"}, drain(f))

	// A subset pod: its owner's UnitedDeployment; a pod of no subset: nothing.
	pods, err := f.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	pod := &pods.Items[0]
	f.ctrl.podChanged(pod)
	assert.Equal(t, []string{ns + "/web"}, drain(f))
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns, Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "CloneSet", Name: cs.Name, Controller: ptr.To(true)}}}}
	f.ctrl.podChanged(stranger)
	assert.Empty(t, drain(f))

	// Pod updates: readiness and scheduling count, a resourceVersion bump does not.
	bumped := pod.DeepCopy()
	bumped.ResourceVersion = "101"
	assert.False(t, podRead(pod, bumped))
	unready := pod.DeepCopy()
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	assert.True(t, podRead(pod, unready))
}
