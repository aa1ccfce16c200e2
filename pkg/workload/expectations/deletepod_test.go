package expectations

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestDeletePod(t *testing.T) {
	ctx := context.Background()
	pod := gen.Pod("web-0", gen.SetPodNamespace("ns"), func(p *corev1.Pod) { p.UID = types.UID("uid-0") })

	s := NewScale(clocktesting.NewFakePassiveClock(t0), timeout)
	client := fake.NewClientset(pod)
	assert.NoError(t, s.DeletePod(ctx, client.CoreV1(), "ns/web", pod))
	assert.Equal(t, []Object{{Action: Delete, Resource: Pods, Name: "web-0"}}, s.Pending("ns/web"), "expected until the cache shows it")

	s = NewScale(clocktesting.NewFakePassiveClock(t0), timeout)
	err := s.DeletePod(ctx, fake.NewClientset().CoreV1(), "ns/web", pod)
	assert.True(t, apierrors.IsNotFound(err), "the error is the API server's: %v", err)
	assert.Empty(t, s.Pending("ns/web"), "a deletion that failed is not waited for")
}
