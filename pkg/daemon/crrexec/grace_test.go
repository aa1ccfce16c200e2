package crrexec

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestGrace(t *testing.T) {
	crrGrace := func(s int64) appsv1alpha1.ContainerRecreateRequestStrategy {
		return appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To(s)}
	}
	podGrace := func(s int64) *corev1.Pod {
		return runningPod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(s) })
	}
	noGrace := runningPod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil })
	for _, tc := range []struct {
		name     string
		strategy appsv1alpha1.ContainerRecreateRequestStrategy
		pod      *corev1.Pod
		want     time.Duration
	}{
		{"the CRR's", crrGrace(5), podGrace(9), 5 * time.Second},
		{"zero: kill at once", crrGrace(0), podGrace(9), 0},
		{"the pod's", appsv1alpha1.ContainerRecreateRequestStrategy{}, podGrace(9), 9 * time.Second},
		{"neither", appsv1alpha1.ContainerRecreateRequestStrategy{}, noGrace, defaultGrace},
		{"the largest the API takes, in the CRR", crrGrace(math.MaxInt64), podGrace(9), maxGrace},
		{"the largest the API takes, in the pod", appsv1alpha1.ContainerRecreateRequestStrategy{}, podGrace(math.MaxInt64), maxGrace},
	} {
		assert.Equal(t, tc.want, grace(tc.strategy, tc.pod), tc.name)
	}
}

// A grace the size of the largest Duration must not reach the runtime: the
// call's deadline (grace plus a margin) would wrap round into the past.
func TestHugeGraceStopsWithBoundedTimeout(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main"), gen.SetCRRTerminationGracePeriodSeconds(math.MaxInt64))
	f := newFixture(t, runningPod(), crr)
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
	assert.Equal(t, []time.Duration{maxGrace}, f.rt.stops)
	assert.Less(t, maxGrace, time.Duration(math.MaxInt64)-time.Hour, "room left for a call margin")
}
