package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// resizeSupport is an inplace.ResizeSupport on an API server that serves pods/resize or not.
func resizeSupport(served bool) *inplace.ResizeSupport {
	l := gen.PodResources(served)
	return inplace.NewResizeSupport(func(string) (*metav1.APIResourceList, error) { return l, nil },
		clocktesting.NewFakePassiveClock(t0))
}

func withCPU(cpu string) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) {
		q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		s.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
	}
}

// resizeWrites syncs a one-pod set whose cpu changes from 100m to 200m under policy, on an API
// server that serves pods/resize or not, and returns the writes and the set's status.
func resizeWrites(t *testing.T, policy appsv1beta1.PodUpdateStrategyType, served bool) ([]string, appsv1beta1.StatefulSetStatus) {
	mod := func(s *appsv1beta1.StatefulSet) {
		inPlace(s)
		s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = policy
	}
	old := statefulSet(1, "app:1", mod, withCPU("100m"))
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(1, "app:1", mod, withCPU("200m"))
	f := newFixtureWith(t, fixtureExtras{resize: resizeSupport(served)}, set, oldRev, runningPod(t, set, oldRev, 0))
	f.sync()
	return f.writes(), f.status()
}

func TestCPUChangeResizesInPlace(t *testing.T) {
	writes, _ := resizeWrites(t, appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, true)
	assert.Contains(t, writes, "patch pods/resize web-0")
	assert.NotContains(t, writes, "delete pods web-0")
}

// Without pods/resize (Kubernetes before 1.33) the pod is recreated, with no resize asked for.
func TestCPUChangeRecreatesWithoutResize(t *testing.T) {
	writes, _ := resizeWrites(t, appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, false)
	assert.Equal(t, []string{"delete pods web-0"}, writes)
}

// Under InPlaceOnly it is refused, the FailedUpdatePod condition saying why.
func TestCPUChangeRefusedWithoutResizeUnderInPlaceOnly(t *testing.T) {
	writes, st := resizeWrites(t, appsv1beta1.InPlaceOnlyPodUpdateStrategyType, false)
	assert.Empty(t, writes)
	c := condition(st, appsv1beta1.FailedUpdatePod)
	if assert.NotNil(t, c, "FailedUpdatePod") {
		assert.Contains(t, c.Message, "spec.containers[main].resources: "+inplace.ResizeNotServed)
	}
}
