package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
)

// A pod's ReplicaSet's controller is read live (the Deployment of a targetRef budget); another
// kind, a ReplicaSet gone or replaced under the same name ends the climb.
func TestLiveOwners(t *testing.T) {
	deploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d1", Controller: ptr.To(true)}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-1", UID: "r1", OwnerReferences: []metav1.OwnerReference{deploy}}}
	o := liveOwners{client: fake.NewClientset(rs)}
	got, err := o.ControllerOf(context.Background(), "team", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "r1"})
	require.NoError(t, err)
	assert.Equal(t, &deploy, got)
	for _, ref := range []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "other"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone"},
		{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "web-1"},
	} {
		got, err := o.ControllerOf(context.Background(), "team", ref)
		require.NoError(t, err)
		assert.Nil(t, got, ref.Name)
	}
}

// Until its cache has synced, a replica reads the budgets live: an empty cache is not "no budget".
func TestPodBudgetsReadLiveUntilSynced(t *testing.T) {
	zero := intstr.FromInt32(0)
	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &zero},
		Status:     policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 1, DesiredAvailable: 1, CurrentAvailable: 1},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-abcde", Labels: map[string]string{"app": "web"}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	b := newPodBudgets(fake.NewClientset(), kruisefake.NewSimpleClientset(pub), nil)
	allowed, reason, err := b.Admit(context.Background(), pod, policyv1alpha1.PubDeleteOperation, true)
	require.NoError(t, err)
	assert.False(t, allowed, "the cache never started: the budget is read live")
	assert.Contains(t, reason, "team/web")

	rec := record.NewFakeRecorder(5)
	b.recorder.set(rec)
	_, _, err = b.Admit(context.Background(), pod, policyv1alpha1.PubEvictOperation, false)
	require.NoError(t, err)
	require.Len(t, rec.Events, 1, "a refusal is recorded on the pod once the recorder runs")
	assert.Contains(t, <-rec.Events, "team/web")
}
