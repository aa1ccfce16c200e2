package cloneset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
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

// withCPU sets the main container's cpu request and limit.
func withCPU(cpu string) func(*appsv1beta1.CloneSet) {
	return func(cs *appsv1beta1.CloneSet) {
		q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		cs.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
	}
}

func withPolicy(p appsv1beta1.CloneSetPodUpdateStrategyType) func(*appsv1beta1.CloneSet) {
	return func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = p }
}

// resizeFixture: one pod at 100m cpu, the CloneSet now asking for 200m under policy.
func resizeFixture(t *testing.T, policy appsv1beta1.CloneSetPodUpdateStrategyType, served bool) *fixture {
	old := cloneSet(1, "app:1", withCPU("100m"), withPolicy(policy))
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(1, "app:1", withCPU("200m"), withPolicy(policy))
	return newFixtureWith(t, cs, []*appsv1.ControllerRevision{oldRev}, []*corev1.Pod{runningPod(t, cs, oldRev, "aaaaa")},
		fixtureExtras{resize: resizeSupport(served)})
}

// writes sorts the fixture's pod writes: resizes, pods marked for recreation, others.
func (f *fixture) podWrites() (resized, marked, other int) {
	for _, act := range f.actions() {
		if act.GetResource().Resource != "pods" {
			continue
		}
		p, isPatch := act.(k8stesting.PatchAction)
		switch {
		case act.GetSubresource() == "resize":
			resized++
		case isPatch && strings.Contains(string(p.GetPatch()), appsv1beta1.SpecifiedDeleteKey):
			marked++
		default:
			other++
		}
	}
	return resized, marked, other
}

// Where the API server serves pods/resize, a cpu change is applied in place through it.
func TestCPUChangeResizesInPlace(t *testing.T) {
	f := resizeFixture(t, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, true)
	f.sync()
	if resized, marked, _ := f.podWrites(); resized != 1 || marked != 0 {
		t.Errorf("%d resizes and %d pods marked for recreation, want 1 and 0: %v", resized, marked, f.actions())
	}
}

// Where it does not (Kubernetes before 1.33), the pod is recreated under InPlaceIfPossible: no
// resize is asked for, which would fail on every sync.
func TestCPUChangeRecreatesWithoutResize(t *testing.T) {
	f := resizeFixture(t, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, false)
	f.sync()
	if resized, marked, _ := f.podWrites(); resized != 0 || marked != 1 {
		t.Errorf("%d resizes and %d pods marked for recreation, want 0 and 1: %v", resized, marked, f.actions())
	}
}

// Under InPlaceOnly it is refused, and the FailedUpdate condition says why.
func TestCPUChangeRefusedWithoutResizeUnderInPlaceOnly(t *testing.T) {
	f := resizeFixture(t, appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType, false)
	f.sync()
	if resized, marked, other := f.podWrites(); resized+marked+other != 0 {
		t.Errorf("pods written for a change that cannot be applied: %v", f.actions())
	}
	failed := f.condition(appsv1beta1.CloneSetConditionFailedUpdate)
	if failed == nil || !strings.Contains(failed.Message, "spec.containers[main].resources: "+inplace.ResizeNotServed) {
		t.Errorf("FailedUpdate condition %+v, want it to say %q", failed, inplace.ResizeNotServed)
	}
}
