package inplace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// fakeDiscovery answers with what its fields hold now, counting the calls.
type fakeDiscovery struct {
	list  *metav1.APIResourceList
	err   error
	calls int
}

func (f *fakeDiscovery) resources(gv string) (*metav1.APIResourceList, error) {
	f.calls++
	if gv != "v1" {
		return nil, errors.New("unexpected group version " + gv)
	}
	return f.list, f.err
}

func TestResizeSupportReadsDiscovery(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		list *metav1.APIResourceList
		want string
	}{
		{"Kubernetes 1.33 and later serve pods/resize", gen.APIResources("v1", "pods", "pods/status", "pods/resize"), ""},
		{"older releases do not", gen.APIResources("v1", "pods", "pods/status", "pods/ephemeralcontainers"), ResizeNotServed},
		{"an empty answer", nil, ResizeNotServed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDiscovery{list: tc.list}
			r := NewResizeSupport(d.resources, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
			assert.Equal(t, tc.want, r.NoResize(ctx))
		})
	}
}

// The answer is kept for resizeRecheck, then asked again: an upgraded control plane is noticed.
func TestResizeSupportRechecks(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	d := &fakeDiscovery{list: gen.APIResources("v1", "pods")}
	r := NewResizeSupport(d.resources, clk)
	assert.Equal(t, ResizeNotServed, r.NoResize(ctx))
	d.list = gen.APIResources("v1", "pods", "pods/resize")
	clk.SetTime(clk.Now().Add(resizeRecheck - time.Second))
	assert.Equal(t, ResizeNotServed, r.NoResize(ctx), "kept within the recheck period")
	assert.Equal(t, 1, d.calls)
	clk.SetTime(clk.Now().Add(time.Second))
	assert.Equal(t, "", r.NoResize(ctx), "asked again after it")
	assert.Equal(t, 2, d.calls)
}

// A failed discovery keeps the last answer (none at first: resizing is assumed) and is retried
// after resizeRetry, not on every call.
func TestResizeSupportDiscoveryFails(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	d := &fakeDiscovery{err: errors.New("connection refused")}
	r := NewResizeSupport(d.resources, clk)
	assert.Equal(t, "", r.NoResize(ctx))
	d.err, d.list = nil, gen.APIResources("v1", "pods")
	assert.Equal(t, "", r.NoResize(ctx), "not asked again before resizeRetry")
	assert.Equal(t, 1, d.calls)
	clk.SetTime(clk.Now().Add(resizeRetry))
	assert.Equal(t, ResizeNotServed, r.NoResize(ctx))
	assert.Equal(t, 2, d.calls)
	d.err = errors.New("connection refused")
	clk.SetTime(clk.Now().Add(resizeRecheck))
	assert.Equal(t, ResizeNotServed, r.NoResize(ctx), "a failure after an answer keeps the answer")
	assert.Equal(t, 3, d.calls)
}

func TestNilResizeSupportResizes(t *testing.T) {
	var r *ResizeSupport
	assert.Equal(t, "", r.NoResize(context.Background()))
}

// ResizeOff answers its reason whatever the API server serves, and plans a cpu change as not in
// place with that reason.
func TestResizeOffIgnoresDiscovery(t *testing.T) {
	r := ResizeOff("told not to")
	assert.Equal(t, "told not to", r.NoResize(context.Background()))

	old := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "a",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	cur := old.DeepCopy()
	cur.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	_, err := Plan(old, cur, Options{Resize: true}.WithoutResize(r.NoResize(context.Background())))
	var notInPlace *NotInPlaceError
	if assert.ErrorAs(t, err, &notInPlace) {
		assert.Equal(t, "spec.containers[app].resources", notInPlace.Field)
		assert.Equal(t, "told not to", notInPlace.Detail)
	}
}
