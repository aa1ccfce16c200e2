package budgetwait

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func TestAdmitAsksOnlyWhenABudgetAndTheGateAreThere(t *testing.T) {
	ctx := context.Background()
	b := gen.RefusingBudget("PodUnavailableBudget ns/pub: no disruption allowed")
	assert.Nil(t, Check{}.Admit(ctx, pod("a"), policyv1alpha1.PubUpdateOperation), "no budget")
	assert.Nil(t, Check{Budget: b}.Admit(ctx, pod("a"), policyv1alpha1.PubUpdateOperation), "gate off")
	assert.Nil(t, Check{Budget: b, InPlace: true}.Admit(ctx, pod("a"), ""), "nothing a budget guards")
	assert.Empty(t, b.Calls())

	w := Check{Budget: b, InPlace: true}.Admit(ctx, pod("a"), policyv1alpha1.PubResizeOperation)
	assert.Equal(t, &Wait{Namespace: "ns", Pod: "a", Op: policyv1alpha1.PubResizeOperation, Reason: b.Reason}, w)
	assert.Equal(t, []gen.BudgetCall{{Pod: "a", Op: policyv1alpha1.PubResizeOperation}}, b.Calls(), "asked for real, not as a dry run")

	assert.Nil(t, Check{Budget: gen.AllowingBudget(), InPlace: true}.Admit(ctx, pod("a"), policyv1alpha1.PubUpdateOperation))
}

func TestAdmitFailureIsAWait(t *testing.T) {
	b := &gen.Budget{Err: errors.New("etcd timeout")}
	w := Check{Budget: b, InPlace: true}.Admit(context.Background(), pod("a"), policyv1alpha1.PubUpdateOperation)
	if assert.NotNil(t, w) {
		assert.True(t, w.Failed)
		assert.Contains(t, w.Reason, "etcd timeout")
	}
}

func TestWaitsCollectsConcurrently(t *testing.T) {
	var w Waits
	done := make(chan struct{})
	for i := 0; i < 8; i++ {
		go func() { w.Add(Wait{Pod: "p"}); done <- struct{}{} }()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	assert.Equal(t, 8, w.Len())
	assert.Len(t, w.List(), 8)
}
