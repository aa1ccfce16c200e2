package gen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Strategy setters create the strategy when there is none and keep what
// the others set.
func TestCRRStrategySettersCompose(t *testing.T) {
	assert.Nil(t, CRR("r").Spec.Strategy)
	c := CRR("r", SetCRRFailurePolicy(appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore), SetCRRMinStartedSeconds(10))
	require.NotNil(t, c.Spec.Strategy)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestStrategy{
		FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore, MinStartedSeconds: 10,
	}, *c.Spec.Strategy)
}

func TestCRRContainerContextSetsTheNamedContainer(t *testing.T) {
	c := CRR("r", SetCRRContainers("main", "sidecar"),
		SetCRRContainerContext("sidecar", appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://b"}))
	assert.Nil(t, c.Spec.Containers[0].StatusContext)
	require.NotNil(t, c.Spec.Containers[1].StatusContext)
	assert.Equal(t, "containerd://b", c.Spec.Containers[1].StatusContext.ContainerID)
	assert.Nil(t, CRR("r", SetCRRContainers()).Spec.Containers)
}

// SetCRRAdmitted makes a new request Pending and leaves a later phase.
func TestCRRAdmitted(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := CRR("r", SetCRRAdmitted(at, "m"))
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, c.Status.Phase)
	assert.True(t, appsv1alpha1.IsAdmitted(c))
	cond := appsv1alpha1.AdmittedCondition(c)
	assert.Equal(t, "m", cond.Message)
	assert.True(t, cond.LastTransitionTime.Time.Equal(at))
	c = CRR("r", SetCRRPhase(appsv1alpha1.ContainerRecreateRequestRecreating), SetCRRAdmitted(at, ""))
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, c.Status.Phase)
	assert.Len(t, c.Status.Conditions, 1)
}
