package podreadiness

import (
	"context"
	"encoding/json"
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
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// pod is a running pod "default/web", with the KruisePodReady gate when
// gated, and the conditions.
func pod(gated bool, conds ...corev1.PodCondition) *corev1.Pod {
	mods := []gen.PodModifier{gen.SetPodNamespace("default"), gen.SetPodResourceVersion("7"), gen.SetPodPhase(corev1.PodRunning)}
	if gated {
		mods = append(mods, gen.AddPodReadinessGate(appsv1alpha1.KruisePodReadyConditionType))
	}
	for _, c := range conds {
		mods = append(mods, gen.SetPodCondition(c))
	}
	return gen.Pod("web", mods...)
}

// fixture is a controller over a fake clientset holding pods, with the
// informer's cache filled by hand.
func fixture(t *testing.T, pods ...*corev1.Pod) (*Controller, *fake.Clientset) {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	c, err := New(Config{Client: client, Pods: podInformer, Clock: clocktesting.NewFakeClock(now)})
	require.NoError(t, err)
	for _, p := range pods {
		require.NoError(t, podInformer.Informer().GetIndexer().Add(p))
	}
	client.ClearActions()
	return c, client
}

// statusPatches returns the conditions of every pods/status patch sent.
func statusPatches(t *testing.T, client *fake.Clientset) [][]corev1.PodCondition {
	t.Helper()
	var out [][]corev1.PodCondition
	for _, a := range client.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || a.GetSubresource() != "status" {
			continue
		}
		var body struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Status corev1.PodStatus `json:"status"`
		}
		require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
		assert.Equal(t, "7", body.Metadata.ResourceVersion, "the patch carries the resourceVersion read")
		out = append(out, body.Status.Conditions)
	}
	return out
}

func TestSync(t *testing.T) {
	deleting := pod(true)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	succeeded := pod(true)
	succeeded.Status.Phase = corev1.PodSucceeded
	cases := []struct {
		name      string
		pod       *corev1.Pod
		wantPatch bool
	}{
		{name: "gate declared, no condition: set True", pod: pod(true), wantPatch: true},
		{name: "no gate: nothing to do", pod: pod(false)},
		{name: "condition True already", pod: pod(true, corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue})},
		{name: "condition False (a CRR holds it): left alone", pod: pod(true, corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse})},
		{name: "being deleted", pod: deleting},
		{name: "finished", pod: succeeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			c, client := fixture(t, tc.pod)
			_, err := c.sync(ctx, "default/web")
			require.NoError(t, err)
			patches := statusPatches(t, client)
			if !tc.wantPatch {
				assert.Empty(t, patches)
				return
			}
			require.Len(t, patches, 1)
			require.Len(t, patches[0], 1, "only the gate's condition is written")
			got := patches[0][0]
			assert.Equal(t, appsv1alpha1.KruisePodReadyConditionType, got.Type)
			assert.Equal(t, corev1.ConditionTrue, got.Status)
			assert.Equal(t, Reason, got.Reason)
			assert.True(t, got.LastTransitionTime.Time.Equal(now))
		})
	}
}

func TestSyncPodGone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c, client := fixture(t)
	_, err := c.sync(ctx, "default/web")
	require.NoError(t, err)
	assert.Empty(t, client.Actions())
}

// A conflict (the pod changed since it was read, e.g. a CRR set the condition
// False) is returned so that the queue retries with the newer pod.
func TestSyncConflictIsRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c, client := fixture(t, pod(true))
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", nil)
	})
	_, err := c.sync(ctx, "default/web")
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err))
}

func TestHandlerQueuesOnlyPodsThatNeedIt(t *testing.T) {
	c, _ := fixture(t)
	c.podChanged(pod(false))
	c.podChanged(pod(true, corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse}))
	assert.Equal(t, 0, c.queue.Len())
	c.podChanged(pod(true))
	assert.Equal(t, 1, c.queue.Len())

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	assert.True(t, c.loop().ProcessNext(ctx))
}
