package launchpriority

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
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// Three levels are released strictly in order as readiness changes, each
// key once, and none is ever taken back.
func TestThreeLevelsReleasedInOrder(t *testing.T) {
	f := newFixture(t, threeLevels(blocked("cache", "app")))

	after := f.sync(t)
	assert.Equal(t, set("p_10"), f.keys(t, barrier), "the ConfigMap is created with the highest priority's key at once")
	cm := f.configMap(t, barrier)
	assert.Equal(t, []metav1.OwnerReference{podOwner()}, cm.OwnerReferences, "owned by the pod, to be collected with it")
	assert.Equal(t, recheck, after, "a waiting pod is looked at again after Recheck")
	assert.Empty(t, f.podPatches(t))

	// Idempotent: nothing new, nothing written.
	f.kube.ClearActions()
	f.sync(t)
	assert.Empty(t, f.writes())

	// db is running but not Ready yet: nothing more.
	f.setPod(t, threeLevels(unready("db"), blocked("cache", "app")))
	f.sync(t)
	assert.Empty(t, f.writes())

	f.setPod(t, threeLevels(ready("db"), blocked("cache", "app")))
	f.sync(t)
	assert.Equal(t, set("p_10", "p_5"), f.keys(t, barrier), "db is Ready: cache may start")
	assert.Equal(t, []map[string]any{{"metadata": map[string]any{
		"uid": string(podUID), "annotations": map[string]any{lp.AnnotationReleased: "p_5"},
	}}}, f.podPatches(t), "the pod is changed, so the kubelet syncs it and starts cache now, with its UID as precondition")
	f.cacheLive(t)
	f.kube.ClearActions()
	f.sync(t)
	assert.Empty(t, f.writes(), "idempotent")

	// cache is Ready, but db has restarted and is not: app keeps waiting,
	// and db's key stays.
	f.setPod(t, threeLevels(unready("db"), ready("cache"), blocked("app")))
	f.sync(t)
	assert.Empty(t, f.writes())
	assert.Equal(t, set("p_10", "p_5"), f.keys(t, barrier))

	f.setPod(t, threeLevels(ready("db", "cache"), blocked("app")))
	assert.Zero(t, f.sync(t), "nothing left to wait for")
	assert.Equal(t, set("p_10", "p_5", "p_0"), f.keys(t, barrier))
	patches := f.podPatches(t)
	require.Len(t, patches, 1)
	assert.Equal(t, map[string]any{"metadata": map[string]any{
		"uid": string(podUID), "annotations": map[string]any{lp.AnnotationCompleted: "true", lp.AnnotationReleased: "p_0"},
	}}, patches[0], "the pod is marked completed, and app released")
	assert.Equal(t, "true", f.getPod(t).Annotations[lp.AnnotationCompleted])

	// Until the kubelet retries app, it still shows the missing key: the
	// ConfigMap is read, and left as it is.
	f.cacheLive(t)
	f.kube.ClearActions()
	f.sync(t)
	assert.Empty(t, f.writes())
	f.setPod(t, threeLevels(ready("db", "cache"), unready("app")))
	f.sync(t)
	assert.Empty(t, f.kube.Actions(), "a completed pod whose containers run costs no call at all")
	assert.Empty(t, f.events())
}

func TestOrderedAnnotation(t *testing.T) {
	ordered := gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: lp.OrderedValue})
	pod := func(mods ...gen.PodModifier) *corev1.Pod {
		return newPod(append([]gen.PodModifier{ordered, top("a"), waits("b", barrier, -1), waits("c", barrier, -2)}, mods...)...)
	}
	f := newFixture(t, pod())
	f.sync(t)
	assert.Equal(t, set("p_0"), f.keys(t, barrier), "the first container's priority is 0")
	f.setPod(t, pod(ready("a")))
	f.sync(t)
	assert.Equal(t, set("p_0", "p_-1"), f.keys(t, barrier))
	f.setPod(t, pod(ready("a", "b")))
	f.sync(t)
	assert.Equal(t, set("p_0", "p_-1", "p_-2"), f.keys(t, barrier))
	assert.Equal(t, "true", f.getPod(t).Annotations[lp.AnnotationCompleted])
}

// A pod OpenKruise's webhook admitted has a barrier on every container,
// the highest included; its ConfigMap's owner reference has no controller
// flag. Both are handled.
func TestOpenKruiseAdmittedPod(t *testing.T) {
	pod := func(mods ...gen.PodModifier) *corev1.Pod {
		return newPod(append([]gen.PodModifier{waits("sidecar", barrier, 1, prio("1")), waits("main", barrier, 0)}, mods...)...)
	}
	t.Run("no ConfigMap yet", func(t *testing.T) {
		f := newFixture(t, pod(blocked("sidecar", "main")))
		f.sync(t)
		assert.Equal(t, set("p_1"), f.keys(t, barrier))
		assert.Equal(t, "p_1", f.getPod(t).Annotations[lp.AnnotationReleased], "the highest level waits too: the kubelet is told")
		f.setPod(t, pod(ready("sidecar"), blocked("main")))
		f.sync(t)
		assert.Equal(t, set("p_1", "p_0"), f.keys(t, barrier))
		assert.Equal(t, "true", f.getPod(t).Annotations[lp.AnnotationCompleted])
	})
	t.Run("OpenKruise's ConfigMap", func(t *testing.T) {
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: podUID}
		f := newFixture(t, pod(ready("sidecar"), blocked("main")), barrierCM(barrier, ref, "p_1"))
		f.sync(t)
		assert.Equal(t, set("p_1", "p_0"), f.keys(t, barrier))
		assert.Equal(t, []metav1.OwnerReference{ref}, f.configMap(t, barrier).OwnerReferences, "its owner references are left as they are")
	})
}

// After completion, restarts and in-place updates find every key: nothing
// is removed, nothing is even read.
func TestRestartAfterCompletionKeepsKeys(t *testing.T) {
	all := barrierCM(barrier, podOwner(), "p_10", "p_5", "p_0")
	f := newFixture(t, threeLevels(completed, unready("db"), ready("cache"), unready("app")), all)
	f.sync(t)
	assert.Empty(t, f.kube.Actions())
	assert.Equal(t, set("p_10", "p_5", "p_0"), f.keys(t, barrier))
	f.ctrl.podChanged(threeLevels(completed, unready("db"), ready("cache"), unready("app")))
	assert.Zero(t, f.ctrl.queue.Len(), "not even queued")
}

func TestConfigMapRecreated(t *testing.T) {
	t.Run("while the pod waits: with the keys that were due", func(t *testing.T) {
		f := newFixture(t, threeLevels(ready("db"), unready("cache"), blocked("app")))
		assert.Equal(t, recheck, f.sync(t))
		assert.Equal(t, set("p_10", "p_5"), f.keys(t, barrier))
		require.NoError(t, f.kube.CoreV1().ConfigMaps(testNS).Delete(t.Context(), barrier, metav1.DeleteOptions{}))
		f.kube.ClearActions()
		// No pod event: the recheck finds it gone.
		f.sync(t)
		assert.Equal(t, set("p_10", "p_5"), f.keys(t, barrier))
		assert.Equal(t, []metav1.OwnerReference{podOwner()}, f.configMap(t, barrier).OwnerReferences)
	})
	t.Run("after completion, when a restarted container cannot read it", func(t *testing.T) {
		pod := threeLevels(completed, ready("db", "cache"), blocked("app"))
		f := newFixture(t, pod)
		f.ctrl.podChanged(pod)
		assert.Equal(t, 1, f.ctrl.queue.Len(), "the kubelet's CreateContainerConfigError queues a completed pod")
		assert.Zero(t, f.sync(t))
		assert.Equal(t, set("p_10", "p_5", "p_0"), f.keys(t, barrier), "every key, at once")
		assert.Empty(t, f.podPatches(t), "already completed")
		f.kube.ClearActions()
		f.sync(t)
		for _, a := range f.kube.Actions() {
			assert.Equal(t, "get", a.GetVerb(), "idempotent")
		}
	})
}

// A container of higher priority that is not Ready within SlowAfter gets a
// Warning Event naming it, once; lower priorities keep waiting.
func TestSlowContainerWarnsOnce(t *testing.T) {
	f := newFixture(t, threeLevels(ready("db"), unready("cache"), blocked("app")))
	f.clock.SetTime(started.Add(4 * time.Minute))
	assert.Equal(t, time.Minute, f.sync(t), "looked at again when it becomes late")
	assert.Empty(t, f.events())

	f.clock.SetTime(started.Add(slowAfter - 20*time.Second))
	assert.Equal(t, 20*time.Second, f.sync(t))
	assert.Empty(t, f.events())

	f.clock.SetTime(started.Add(slowAfter))
	assert.Equal(t, recheck, f.sync(t))
	assert.Equal(t, []string{"Warning LaunchPriorityBlocked container cache (priority 5) is not Ready 5m0s after the pod started; " +
		"the containers of lower priority (app) wait for it and do not start until it is"}, f.events())
	assert.Equal(t, set("p_10", "p_5"), f.keys(t, barrier), "app is not released early")

	f.clock.Step(time.Hour)
	f.sync(t)
	f.setPod(t, threeLevels(ready("db"), unready("cache"), blocked("app")))
	f.sync(t)
	assert.Empty(t, f.events(), "once")
	assert.Equal(t, set("p_10", "p_5"), f.keys(t, barrier))

	// A pod the kubelet has not started: no clock to count from yet.
	g := newFixture(t, gen.PodFrom(threeLevels(), func(p *corev1.Pod) { p.Status.StartTime = nil }))
	g.clock.Step(time.Hour)
	assert.Equal(t, recheck, g.sync(t))
	assert.Empty(t, g.events())
}

func TestPodWithoutBarrierIgnored(t *testing.T) {
	pod := newPod(top("a", prio("1")), top("b"))
	f := newFixture(t, pod)
	f.ctrl.podChanged(pod)
	assert.Zero(t, f.ctrl.queue.Len())
	f.sync(t)
	assert.Empty(t, f.kube.Actions())
}

// A pod created with generateName reads a ConfigMap named from its
// generateName and a token, not from its name: the controller creates the
// one its containers name.
func TestGenerateNamePod(t *testing.T) {
	cm := lp.GeneratedBarrierName("web-", "admission-uid")
	pod := newPod(gen.SetPodGenerateName("web-"), top("sidecar", prio("1")), waits("main", cm, 0))
	f := newFixture(t, pod)
	f.sync(t)
	assert.Equal(t, set("p_1"), f.keys(t, cm))
	assert.Nil(t, f.keys(t, barrier))
	assert.Equal(t, []metav1.OwnerReference{podOwner()}, f.configMap(t, cm).OwnerReferences)
}

// A pod of the same name created again (a StatefulSet's) finds the previous
// pod's ConfigMap, with all its keys, still waiting for the garbage
// collector: it is left to the collector (changing its owner references would
// need the right to delete ConfigMaps under OwnerReferencesPermissionEnforcement),
// and looked at again soon; once it is gone, this pod's is created.
func TestPreviousPodsConfigMapLeftToTheCollector(t *testing.T) {
	old := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: "previous-uid"}
	f := newFixture(t, threeLevels(), barrierCM(barrier, old, "p_10", "p_5", "p_0"))
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, podKey)
	require.NoError(t, err)
	assert.Equal(t, previousBarrierRecheck, after)
	assert.Empty(t, f.writes(), "the previous pod's ConfigMap is not written")

	require.NoError(t, f.kube.CoreV1().ConfigMaps(testNS).Delete(ctx, barrier, metav1.DeleteOptions{})) // the collector
	f.sync(t)
	cm := f.configMap(t, barrier)
	assert.Equal(t, set("p_10"), cm.Data)
	assert.Equal(t, []metav1.OwnerReference{podOwner()}, cm.OwnerReferences)
}

func TestForeignConfigMapNotWritten(t *testing.T) {
	for name, cm := range map[string]*corev1.ConfigMap{
		"no owner":        gen.ConfigMap(barrier, gen.SetConfigMapNamespace(testNS), gen.SetConfigMapData(map[string]string{"p_0": "x"})),
		"another pod":     barrierCM(barrier, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "other", UID: "u2", Controller: new(bool)}),
		"another kind":    barrierCM(barrier, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: podName, UID: "u3"}),
		"being collected": gen.ConfigMapFrom(barrierCM(barrier, podOwner()), func(c *corev1.ConfigMap) { c.DeletionTimestamp = &metav1.Time{Time: now} }),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, threeLevels(ready("db")), cm)
			_, ctx := ktesting.NewTestContext(t)
			_, err := f.ctrl.sync(ctx, podKey)
			assert.Empty(t, f.writes())
			if name == "being collected" {
				require.Error(t, err, "retried until it is gone")
				assert.Contains(t, err.Error(), "is being deleted")
				return
			}
			require.NoError(t, err)
			ev := f.events()
			require.Len(t, ev, 1)
			assert.Contains(t, ev[0], "Warning LaunchBarrierConflict ConfigMap web-barrier, which the containers' KRUISE_CONTAINER_BARRIER env vars read, is not this pod's")
			f.sync(t)
			assert.Empty(t, f.events(), "once")
		})
	}
}

func TestInvalidBarrierReported(t *testing.T) {
	for name, pod := range map[string]*corev1.Pod{
		"literal value":  newPod(top("a", prio("1")), top("b", corev1.EnvVar{Name: lp.EnvBarrier, Value: "go"})),
		"two ConfigMaps": newPod(top("a", prio("2")), waits("b", barrier, 1), waits("c", "other-barrier", 0)),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, pod)
			f.sync(t)
			assert.Empty(t, f.writes())
			ev := f.events()
			require.Len(t, ev, 1)
			assert.Contains(t, ev[0], "Warning InvalidLaunchBarrier kruise cannot release this pod's containers")
			f.sync(t)
			assert.Empty(t, f.events(), "once")
		})
	}
}

// A Job's container that ran to completion is never Ready again: exiting 0
// under restartPolicy Never or OnFailure lets the next level start; a
// failure does not.
func TestRunToCompletionContainer(t *testing.T) {
	pod := func(policy corev1.RestartPolicy, code int32) *corev1.Pod {
		return newPod(gen.SetPodRestartPolicy(policy), top("setup", prio("1")), waits("main", barrier, 0), exited("setup", code), blocked("main"))
	}
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		code   int32
		want   map[string]string
	}{
		{corev1.RestartPolicyNever, 0, set("p_1", "p_0")},
		{corev1.RestartPolicyOnFailure, 0, set("p_1", "p_0")},
		{corev1.RestartPolicyNever, 1, set("p_1")},
		{corev1.RestartPolicyAlways, 0, set("p_1")},
	} {
		f := newFixture(t, pod(tc.policy, tc.code))
		f.sync(t)
		assert.Equal(t, tc.want, f.keys(t, barrier), "%s exit %d", tc.policy, tc.code)
	}
}

func TestNothingForPodsThatCannotStart(t *testing.T) {
	for name, pod := range map[string]*corev1.Pod{
		"deleting":  threeLevels(gen.SetPodDeletionTimestamp(now)),
		"succeeded": threeLevels(gen.SetPodPhase(corev1.PodSucceeded)),
		"failed":    threeLevels(gen.SetPodPhase(corev1.PodFailed)),
	} {
		f := newFixture(t, pod)
		f.ctrl.podChanged(pod)
		assert.Zero(t, f.ctrl.queue.Len(), name)
		f.sync(t)
		assert.Empty(t, f.kube.Actions(), name)
	}
	f := newFixture(t, nil)
	f.sync(t)
	assert.Empty(t, f.kube.Actions(), "pod gone: its ConfigMap is the garbage collector's")
}

// A write that conflicts is returned, to be decided again on what the
// ConfigMap holds then.
func TestConflictIsRetried(t *testing.T) {
	f := newFixture(t, threeLevels(ready("db")), barrierCM(barrier, podOwner(), "p_10"))
	f.kube.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, barrier, errors.New("changed"))
	})
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, podKey)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err))
}

// The queue loop runs sync and honours its requeue.
func TestLoopRequeuesWaitingPod(t *testing.T) {
	pod := threeLevels()
	f := newFixture(t, pod)
	f.ctrl.podChanged(pod)
	f.ctrl.podChanged(newPod(top("x")))
	require.Equal(t, 1, f.ctrl.queue.Len())
	_, ctx := ktesting.NewTestContext(t)
	assert.True(t, f.ctrl.loop().ProcessNext(ctx))
	assert.Equal(t, set("p_10"), f.keys(t, barrier))
	assert.Zero(t, f.ctrl.queue.Len())
	f.clock.Step(recheck)
	require.Eventually(t, func() bool { return f.ctrl.queue.Len() == 1 }, 5*time.Second, 5*time.Millisecond, "back after Recheck")
}
