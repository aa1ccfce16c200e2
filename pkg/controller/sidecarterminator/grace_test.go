package sidecarterminator

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The follow-up deadline is the grace plus followUpSlack: the largest grace
// the API takes must not wrap that sum round into the past.
func TestPodGrace(t *testing.T) {
	pod := func(g *int64) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: g}}
	}
	assert.Equal(t, 30*time.Second, podGrace(pod(nil)))
	assert.Equal(t, 2*time.Second, podGrace(pod(ptr.To[int64](2))))
	huge := podGrace(pod(ptr.To[int64](math.MaxInt64)))
	assert.Equal(t, maxGrace, huge)
	assert.Positive(t, huge+followUpSlack, "no wrap-around")
}
