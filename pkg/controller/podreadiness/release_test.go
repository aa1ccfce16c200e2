package podreadiness

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// held is the pod's KruisePodReady condition, False since a minute ago,
// with message as its holder list.
func held(message string) corev1.PodCondition {
	return corev1.PodCondition{
		Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Reason: readinessgate.ReasonHeld,
		Message: message, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute)),
	}
}

// crr is a request of pod default/web in phase.
func crr(name string, phase appsv1alpha1.ContainerRecreateRequestPhase) *appsv1alpha1.ContainerRecreateRequest {
	return gen.CRR(name, gen.SetCRRNamespace("default"), gen.SetCRRPodName("web"), gen.SetCRRPhase(phase))
}

type releaseFixture struct {
	ctrl   *Controller
	kube   *fake.Clientset
	kruise *kruisefake.Clientset
	crrs   cache.Indexer
}

// newReleaseFixture builds the controller with a CRR informer. cached CRRs
// are in the cache and on the server; apiOnly ones only on the server (a
// cache that lags).
func newReleaseFixture(t *testing.T, p *corev1.Pod, cached, apiOnly []*appsv1alpha1.ContainerRecreateRequest) *releaseFixture {
	t.Helper()
	var objs []runtime.Object
	for _, c := range append(append([]*appsv1alpha1.ContainerRecreateRequest{}, cached...), apiOnly...) {
		objs = append(objs, c)
	}
	f := &releaseFixture{kube: fake.NewClientset(p), kruise: kruisefake.NewSimpleClientset(objs...)}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	pods, crrs := factory.Core().V1().Pods(), kf.Apps().V1alpha1().ContainerRecreateRequests()
	c, err := New(Config{Client: f.kube, Pods: pods, KruiseClient: f.kruise, CRRs: crrs, Clock: clocktesting.NewFakeClock(now)})
	require.NoError(t, err)
	require.NoError(t, pods.Informer().GetIndexer().Add(p))
	f.crrs = crrs.Informer().GetIndexer()
	for _, cr := range cached {
		require.NoError(t, f.crrs.Add(cr))
	}
	f.kube.ClearActions()
	f.ctrl = c
	return f
}

func TestReleaseStaleHolders(t *testing.T) {
	const (
		one  = `[{"userAgent":"ContainerRecreateRequest","key":"default/a"}]`
		two  = `[{"userAgent":"ContainerRecreateRequest","key":"default/a"},{"userAgent":"ContainerRecreateRequest","key":"default/b"}]`
		life = `[{"userAgent":"Lifecycle","key":"default/web"},{"userAgent":"ContainerRecreateRequest","key":"default/a"}]`
	)
	tests := []struct {
		name      string
		cond      corev1.PodCondition
		cached    []*appsv1alpha1.ContainerRecreateRequest
		apiOnly   []*appsv1alpha1.ContainerRecreateRequest
		wantCond  *corev1.PodCondition // nil: nothing written
		wantQueue bool                 // the pod handler queues the pod
	}{
		{
			// Deleted while no controller ran (a failover): nothing remembers
			// the deletion, the pod's condition alone says it is held.
			name: "holder deleted: released", cond: held(one), wantQueue: true,
			wantCond: &corev1.PodCondition{Status: corev1.ConditionTrue, Reason: readinessgate.ReasonReleased, Message: "[]"},
		},
		{
			name: "holder completed: released", cond: held(one), cached: []*appsv1alpha1.ContainerRecreateRequest{crr("a", appsv1alpha1.ContainerRecreateRequestCompleted)},
			wantQueue: true, wantCond: &corev1.PodCondition{Status: corev1.ConditionTrue, Reason: readinessgate.ReasonReleased, Message: "[]"},
		},
		{
			name: "holder still running: kept", cond: held(one), cached: []*appsv1alpha1.ContainerRecreateRequest{crr("a", appsv1alpha1.ContainerRecreateRequestRecreating)},
		},
		{
			name: "one of two gone: the other keeps it not-ready, since the first transition",
			cond: held(two), cached: []*appsv1alpha1.ContainerRecreateRequest{crr("b", appsv1alpha1.ContainerRecreateRequestPending)},
			wantQueue: true,
			wantCond: &corev1.PodCondition{Status: corev1.ConditionFalse, Reason: readinessgate.ReasonHeld,
				Message: `[{"userAgent":"ContainerRecreateRequest","key":"default/b"}]`, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
		},
		{
			name: "another user's holder is left alone", cond: held(life), wantQueue: true,
			wantCond: &corev1.PodCondition{Status: corev1.ConditionFalse, Reason: readinessgate.ReasonLifecycleHeld,
				Message: `[{"userAgent":"Lifecycle","key":"default/web"}]`, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
		},
		{
			// The cache lags: the request exists on the server.
			name: "missing from the cache only: kept", cond: held(one), wantQueue: true,
			apiOnly: []*appsv1alpha1.ContainerRecreateRequest{crr("a", appsv1alpha1.ContainerRecreateRequestPending)},
		},
		{
			name: "the prose of an earlier release: read as its holder", wantQueue: true,
			cond:     held("ContainerRecreateRequest a is recreating containers"),
			wantCond: &corev1.PodCondition{Status: corev1.ConditionTrue, Reason: readinessgate.ReasonReleased, Message: "[]"},
		},
		{
			name: "held by kruise with no holder named: released", wantQueue: true, cond: held("not a list"),
			wantCond: &corev1.PodCondition{Status: corev1.ConditionTrue, Reason: readinessgate.ReasonReleased, Message: "[]"},
		},
		{
			name: "False set by someone else: left alone",
			cond: corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Reason: "Maintenance"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newReleaseFixture(t, pod(true, tc.cond), tc.cached, tc.apiOnly)
			f.ctrl.podChanged(pod(true, tc.cond))
			assert.Equal(t, tc.wantQueue, f.ctrl.queue.Len() == 1, "queued by the pod handler")

			_, err := f.ctrl.sync(ctx, "default/web")
			require.NoError(t, err)
			patches := statusPatches(t, f.kube)
			if tc.wantCond == nil {
				assert.Empty(t, patches)
				return
			}
			require.Len(t, patches, 1)
			require.Len(t, patches[0], 1)
			got := patches[0][0]
			got.LastTransitionTime = metav1.NewTime(got.LastTransitionTime.UTC())
			want := *tc.wantCond
			want.Type = appsv1alpha1.KruisePodReadyConditionType
			if want.LastTransitionTime.IsZero() {
				want.LastTransitionTime = metav1.NewTime(now)
			}
			assert.Equal(t, want, got)
		})
	}
}

// A request that completes or is deleted queues its pod.
func TestCRRHandlersQueueThePod(t *testing.T) {
	f := newReleaseFixture(t, pod(true), nil, nil)
	f.ctrl.crrUpdated(crr("a", appsv1alpha1.ContainerRecreateRequestRecreating))
	assert.Equal(t, 0, f.ctrl.queue.Len(), "still running")
	f.ctrl.crrUpdated(crr("a", appsv1alpha1.ContainerRecreateRequestCompleted))
	assert.Equal(t, 1, f.ctrl.queue.Len())
	key, _ := f.ctrl.queue.Get()
	assert.Equal(t, "default/web", key)
	f.ctrl.queue.Done(key)
	f.ctrl.crrDeleted(cache.DeletedFinalStateUnknown{Key: "default/a", Obj: crr("a", appsv1alpha1.ContainerRecreateRequestPending)})
	assert.Equal(t, 1, f.ctrl.queue.Len())
}

// A release that conflicts is returned, to be decided again on the newer pod.
func TestReleaseConflict(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newReleaseFixture(t, pod(true, held(`[{"userAgent":"ContainerRecreateRequest","key":"default/a"}]`)), nil, nil)
	f.kube.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("changed"))
	})
	_, err := f.ctrl.sync(ctx, "default/web")
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err))
}
