package broadcastjob

import (
	"context"
	"errors"
	"testing"

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
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

type fixture struct {
	ctrl    *Controller
	client  *fake.Clientset
	kruise  *kruisefake.Clientset
	kf      kruiseinformers.SharedInformerFactory
	f       informers.SharedInformerFactory
	created int
}

// newFixture builds a controller over fake clients; objects go to the API server and the caches.
func newFixture(t *testing.T, job *v1beta1.BroadcastJob, objs ...runtime.Object) *fixture {
	fx := &fixture{client: fake.NewClientset(objs...), kruise: kruisefake.NewSimpleClientset(job)}
	fx.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		fx.created++
		pod.Name = pod.GenerateName + string(rune('a'+fx.created))
		return false, nil, nil
	})
	fx.kf = kruiseinformers.NewSharedInformerFactory(fx.kruise, 0)
	fx.f = informers.NewSharedInformerFactory(fx.client, 0)
	c, err := New(Config{
		Config: ctrlbase.Config{Client: fx.client, KruiseClient: fx.kruise, Recorder: record.NewFakeRecorder(100), Clock: clocktesting.NewFakeClock(t0)},
		Jobs:   fx.kf.Apps().V1beta1().BroadcastJobs(),
		Pods:   fx.f.Core().V1().Pods(),
		Nodes:  fx.f.Core().V1().Nodes(),
	})
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	fx.ctrl = c
	require.NoError(t, fx.kf.Apps().V1beta1().BroadcastJobs().Informer().GetIndexer().Add(job))
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			require.NoError(t, fx.f.Core().V1().Nodes().Informer().GetIndexer().Add(o))
		case *corev1.Pod:
			require.NoError(t, fx.f.Core().V1().Pods().Informer().GetIndexer().Add(o))
		}
	}
	return fx
}

func (fx *fixture) status(t *testing.T) v1beta1.BroadcastJobStatus {
	j, err := fx.kruise.AppsV1beta1().BroadcastJobs("ns").Get(context.Background(), "job", metav1.GetOptions{})
	require.NoError(t, err)
	return j.Status
}

func (fx *fixture) livePods(t *testing.T) []corev1.Pod {
	l, err := fx.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return l.Items
}

func TestSyncWaitsForItsCreationsBeforeCreatingAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	fx := newFixture(t, newJob(), mkNode("a"), mkNode("b"))
	_, err := fx.ctrl.sync(ctx, "ns/job")
	require.NoError(t, err)
	assert.Len(t, fx.livePods(t), 2)
	assert.Equal(t, int32(2), fx.status(t).Active, "the pods the API server accepted")

	// The cache has not shown the pods yet: a second pass (a restart would start from a synced
	// cache) must not create again.
	_, err = fx.ctrl.sync(ctx, "ns/job")
	require.NoError(t, err)
	assert.Len(t, fx.livePods(t), 2, "no second pod for a node while its first is unseen")

	// The cache shows one of them: still waiting for the other.
	pods := fx.livePods(t)
	fx.ctrl.podAdded(&pods[0])
	_, err = fx.ctrl.sync(ctx, "ns/job")
	require.NoError(t, err)
	assert.Len(t, fx.livePods(t), 2)
	assert.Len(t, fx.ctrl.expect.Pending("ns/job"), 1)
}

func TestSyncAfterRestartCreatesNothingForNodesWithPods(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	existing := mkPod("job-x", "a", corev1.PodRunning)
	fx := newFixture(t, newJob(), mkNode("a"), mkNode("b"), existing)
	_, err := fx.ctrl.sync(ctx, "ns/job")
	require.NoError(t, err)
	pods := fx.livePods(t)
	require.Len(t, pods, 2)
	assert.Equal(t, 1, fx.created, "only node b gets a pod")
	assert.Equal(t, [4]int32{2, 2, 0, 0}, counts(fx.status(t)))
}

func TestSyncFailedCreationIsNotCountedActive(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	fx := newFixture(t, newJob(), mkNode("a"), mkNode("b"), mkNode("c"))
	fx.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("quota exceeded"))
	})
	_, err := fx.ctrl.sync(ctx, "ns/job")
	require.Error(t, err)
	assert.Empty(t, fx.livePods(t))
	assert.Equal(t, [4]int32{3, 0, 0, 0}, counts(fx.status(t)), "OpenKruise #2414: refused creations are not active")
	assert.Empty(t, fx.ctrl.expect.Pending("ns/job"), "nothing is awaited for creations that failed or were not tried")
}

func TestSyncDeletesJobAfterTTL(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	job := newJob(func(j *v1beta1.BroadcastJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = new(int32)
		j.Status.CompletionTime = &metav1.Time{Time: t0}
		j.Status.Conditions = []v1beta1.JobCondition{{Type: v1beta1.JobComplete, Status: corev1.ConditionTrue}}
	})
	fx := newFixture(t, job)
	_, err := fx.ctrl.sync(ctx, "ns/job")
	require.NoError(t, err)
	_, err = fx.kruise.AppsV1beta1().BroadcastJobs("ns").Get(context.Background(), "job", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deleted: %v", err)
}

func TestNodeEventsQueueTheJobsWhoseFitChanged(t *testing.T) {
	fx := newFixture(t, newJob(func(j *v1beta1.BroadcastJob) { j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"} }))
	a := mkNode("a")
	b := mkNode("b", func(n *corev1.Node) { n.Labels["pool"] = "b" })
	fx.ctrl.enqueueForNode(nil, b)
	assert.Equal(t, 0, fx.ctrl.queue.Len(), "a node that does not fit")
	fx.ctrl.enqueueForNode(nil, a)
	assert.Equal(t, 1, fx.ctrl.queue.Len(), "a node that fits")
	key, _ := fx.ctrl.queue.Get()
	fx.ctrl.queue.Done(key)
	fx.ctrl.queue.Forget(key)

	heartbeat := a.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	assert.False(t, fitInputsChanged(a, heartbeat), "a status update changes no fit input")
	notReady := a.DeepCopy()
	notReady.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
	assert.True(t, fitInputsChanged(a, notReady))
	fx.ctrl.enqueueForNode(a, notReady)
	assert.Equal(t, 1, fx.ctrl.queue.Len(), "its fit flipped")
}

// Pods that end one after another are gathered into one later sync of their job; a pod being
// deleted (or moved to a node) queues the job at once.
func TestPodPhaseChangesAreBatched(t *testing.T) {
	fx := newFixture(t, newJob(), mkNode("a"))
	running := mkPod("job-a", "a", corev1.PodRunning)
	running.ResourceVersion = "1"
	done := running.DeepCopy()
	done.ResourceVersion, done.Status.Phase = "2", corev1.PodSucceeded
	fx.ctrl.podUpdated(running, done)
	assert.Equal(t, 0, fx.ctrl.queue.Len(), "a phase change waits for the batch")

	gone := running.DeepCopy()
	gone.ResourceVersion = "3"
	deleting(gone)
	fx.ctrl.podUpdated(running, gone)
	assert.Equal(t, 1, fx.ctrl.queue.Len(), "a deletion is synced at once")
}
