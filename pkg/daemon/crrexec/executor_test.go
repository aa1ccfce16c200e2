package crrexec

import (
	"context"
	"errors"
	"slices"
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
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// kubeletRestarts models the kubelet replacing main's stopped instance with
// ccc, started at started and ready.
func kubeletRestarts(t *testing.T, f *fixture, name, newID string, started time.Time, ready bool) {
	t.Helper()
	f.rt.restart(name, newID, 1)
	f.setPod(t, runningPod(gen.SetPodContainerStatus(runningStatus(name, "containerd://"+newID, 1, ready, started))))
}

func TestRecreateOneContainer(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))

	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
	assert.Equal(t, []time.Duration{30 * time.Second}, f.rt.stops, "no grace anywhere: 30s")
	crr := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, crr.Status.Phase)
	assert.Equal(t, map[string]string{"main": "Recreating/killed"}, states(crr))

	// Not yet restarted: nothing more happens, and nothing is stopped again.
	f.sync(t)
	assert.Len(t, f.rt.calls(), 1)

	kubeletRestarts(t, f, "main", "ccc", tNow, true)
	f.sync(t)
	crr = f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, crr.Status.Phase)
	assert.Equal(t, "recreated 1 container", crr.Status.Message)
	assert.Equal(t, map[string]string{"main": "Succeeded/killed"}, states(crr))
	assert.NotNil(t, crr.Status.CompletionTime)
	assert.Equal(t, []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus{
		{Name: "main", Ready: true, RestartCount: 1, ContainerID: "containerd://ccc"},
	}, crr.Status.ContainerStatusSnapshot, "the new instance, as OpenKruise's v1beta1 reports it")
	assert.Len(t, f.rt.calls(), 1)
	assert.Equal(t, 1.0, f.completedTotal(outcomeSucceeded))
	assert.Equal(t, uint64(1), f.recreateObservations())
	assert.Contains(t, f.events(), "Normal Killed Stopped container main (aaa)")
}

func TestAlreadyRecreated(t *testing.T) {
	for _, tc := range []struct {
		name      string
		force     bool
		ready     bool
		wantStops []string
		wantState string
	}{
		{name: "restarted and ready: not killed again", ready: true, wantState: "Succeeded"},
		{name: "restarted, still starting: not killed without force", ready: false, wantState: "Pending"},
		{name: "force kills an instance still starting", force: true, ready: false, wantStops: []string{"stop ccc"}, wantState: "Recreating/killed"},
		{name: "force leaves a ready new instance alone", force: true, ready: true, wantState: "Succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := runningPod(gen.SetPodContainerStatus(runningStatus("main", "containerd://ccc", 1, tc.ready, tNow.Add(-time.Second))))
			crr := gen.CRRFrom(newCRR("r", time.Minute, "main"), gen.SetCRRForceRecreate(tc.force))
			f := newFixture(t, pod, crr)
			f.sync(t)
			assert.Equal(t, tc.wantStops, f.rt.calls())
			got := states(f.get(t, "r"))
			assert.Equal(t, tc.wantState, got["main"])
		})
	}
}

func TestPreStopThenStopWithRemainingGrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hookTime time.Duration
		grace    int64
		want     time.Duration
	}{
		{name: "quick hook: the stop gets the rest", hookTime: time.Second, grace: 10, want: 9 * time.Second},
		{name: "slow hook: floor of 2s", hookTime: 9 * time.Second, grace: 10, want: 2 * time.Second},
		{name: "zero grace: floor of 2s", grace: 0, want: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crr := gen.CRRFrom(newCRR("r", time.Minute, "main"), gen.SetCRRTerminationGracePeriodSeconds(tc.grace))
			f := newFixture(t, runningPod(gen.SetPodContainerPreStop("main", execHook("touch", "/x"))), crr)
			f.rt.execFn = func(context.Context) (cri.ExecResult, error) {
				f.clock.Step(tc.hookTime)
				return cri.ExecResult{}, nil
			}
			f.sync(t)
			if tc.grace == 0 {
				// No grace left at all: the hook is not even started.
				assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
			} else {
				assert.Equal(t, []string{"exec " + mainID, "stop " + mainID}, f.rt.calls())
			}
			assert.Equal(t, []time.Duration{tc.want}, f.rt.stops)
		})
	}
}

func TestPreStopFailureAndTCPStillStop(t *testing.T) {
	crr := newCRR("r", time.Minute, "main", "sidecar")
	pod := runningPod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5) },
		gen.SetPodContainerPreStop("main", execHook("false")), gen.SetPodContainerPreStop("sidecar", &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{}}))
	f := newFixture(t, pod, crr)
	f.rt.execFn = func(context.Context) (cri.ExecResult, error) { return cri.ExecResult{ExitCode: 1}, nil }
	f.sync(t)
	assert.Equal(t, []string{"exec " + mainID, "stop " + mainID, "stop " + sideID}, f.rt.calls())
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Second}, f.rt.stops, "the pod's grace applies")
	reasons := f.events()
	assert.Contains(t, reasons, "Warning PreStopFailed PreStop hook of container main failed: exec preStop hook exited with code 1")
	assert.Contains(t, reasons, "Warning PreStopNotSupported Container sidecar: "+ErrHookNotSupported.Error())
}

func TestOrderedRecreate(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(map[bool]string{true: "ordered", false: "unordered"}[ordered], func(t *testing.T) {
			crr := gen.CRRFrom(newCRR("r", time.Minute, "main", "sidecar"), gen.SetCRROrderedRecreate(ordered))
			f := newFixture(t, runningPod(), crr)
			f.sync(t)
			if ordered {
				assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
				assert.Equal(t, map[string]string{"main": "Recreating/killed", "sidecar": "Pending"}, states(f.get(t, "r")))
				kubeletRestarts(t, f, "main", "ccc", tNow, true)
				f.sync(t)
			}
			assert.Equal(t, []string{"stop " + mainID, "stop " + sideID}, f.rt.calls())
		})
	}
}

func TestFailurePolicy(t *testing.T) {
	for _, policy := range []appsv1alpha1.ContainerRecreateRequestFailurePolicyType{
		appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
	} {
		t.Run(string(policy), func(t *testing.T) {
			crr := gen.CRRFrom(newCRR("r", time.Minute, "main", "sidecar"), gen.SetCRRFailurePolicy(policy))
			f := newFixture(t, runningPod(), crr)
			f.rt.stopErr = map[string]error{mainID: errors.New("runtime says no")}
			f.sync(t)
			got := f.get(t, "r")
			if policy == appsv1alpha1.ContainerRecreateRequestFailurePolicyFail {
				assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
				assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
				assert.Equal(t, "container main failed: stopping the container: runtime says no", got.Status.Message)
				assert.Equal(t, map[string]string{"main": "Failed", "sidecar": "Pending"}, states(got))
				assert.Equal(t, 1.0, f.completedTotal(outcomeFailed))
				return
			}
			assert.Equal(t, []string{"stop " + mainID, "stop " + sideID}, f.rt.calls())
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, got.Status.Phase)
			kubeletRestarts(t, f, "sidecar", "ddd", tNow, true)
			f.sync(t)
			got = f.get(t, "r")
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
			assert.Equal(t, map[string]string{"main": "Failed", "sidecar": "Succeeded/killed"}, states(got))
			assert.Equal(t, "container main failed: stopping the container: runtime says no", got.Status.Message)
		})
	}
}

func TestContainerNotInRuntimeFails(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	f.rt.containers = nil
	f.sync(t)
	got := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Equal(t, "container main failed: not found in the container runtime", got.Status.Message)
	assert.Empty(t, f.rt.calls())
}

func TestMinStartedSeconds(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main"), gen.SetCRRMinStartedSeconds(10))
	f := newFixture(t, runningPod(), crr)
	f.sync(t)
	kubeletRestarts(t, f, "main", "ccc", tNow.Add(-3*time.Second), true)
	assert.Equal(t, 7*time.Second, f.sync(t), "requeued for the rest of minStartedSeconds")
	assert.Equal(t, "Recreating/killed", states(f.get(t, "r"))["main"])

	f.clock.Step(7 * time.Second)
	assert.Zero(t, f.sync(t))
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, f.get(t, "r").Status.Phase)
}

func TestNotReadyNewInstanceWaits(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	f.sync(t)
	kubeletRestarts(t, f, "main", "ccc", tNow, false)
	f.sync(t)
	assert.Equal(t, "Recreating/killed", states(f.get(t, "r"))["main"])
}

func TestPodsThatDoNotRestart(t *testing.T) {
	for _, tc := range []struct {
		policy   corev1.RestartPolicy
		exitCode int32
		want     string
	}{
		{corev1.RestartPolicyNever, 137, "Succeeded/killed"},
		{corev1.RestartPolicyOnFailure, 0, "Succeeded/killed"},
		{corev1.RestartPolicyOnFailure, 137, "Recreating/killed"}, // the kubelet restarts it
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			pod := runningPod(func(p *corev1.Pod) { p.Spec.RestartPolicy = tc.policy })
			f := newFixture(t, pod, newCRR("r", time.Minute, "main"))
			f.sync(t)
			f.rt.containers[0].ExitCode = tc.exitCode
			f.sync(t)
			assert.Equal(t, tc.want, states(f.get(t, "r"))["main"])
			assert.Len(t, f.rt.calls(), 1)
		})
	}
}

func TestTwoCRRsInCreationOrder(t *testing.T) {
	older := newCRR("z-older", 2*time.Minute, "sidecar")
	newer := newCRR("a-newer", time.Minute, "main")
	f := newFixture(t, runningPod(), newer, older)
	f.sync(t)
	assert.Equal(t, []string{"stop " + sideID}, f.rt.calls(), "the older CRR goes first")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, f.get(t, "a-newer").Status.Phase)

	kubeletRestarts(t, f, "sidecar", "ddd", tNow, true)
	f.sync(t) // completes the older one
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, f.get(t, "z-older").Status.Phase)
	f.sync(t) // the next one starts
	assert.Equal(t, []string{"stop " + sideID, "stop " + mainID}, f.rt.calls())
}

// Created in the same second (timestamps have one-second resolution): the
// creation revision kruise-controller recorded orders them, not the name.
func TestSameCreationSecondOrderedByCreationRevision(t *testing.T) {
	first, second := newCRR("z-first", time.Minute, "main"), newCRR("a-second", time.Minute, "sidecar")
	first.Status.CreationRevision, second.Status.CreationRevision = "99", "100" // numerically, not as text
	f := newFixture(t, runningPod(), second, first)
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
}

// A request its creator routed to this node but kruise-controller has not
// admitted (no Admitted condition: labels and statusContext are the
// creator's) is never acted on; an admitted one of the same pod is.
func TestUnadmittedIsNotActedOn(t *testing.T) {
	forged := newCRR("forged", 2*time.Minute, "main")
	forged.Status = appsv1alpha1.ContainerRecreateRequestStatus{}
	waiting := newCRR("waiting", 2*time.Minute, "main")
	waiting.Status.Conditions[0].Status = metav1.ConditionFalse
	waiting.Status.Conditions[0].Reason = appsv1alpha1.ContainerRecreateRequestReasonWaitingForPod
	f := newFixture(t, runningPod(), forged, waiting)
	f.sync(t)
	assert.Empty(t, f.rt.calls())
	assert.Empty(t, f.get(t, "forged").Status.Phase, "not written")

	f = newFixture(t, runningPod(), forged, waiting, newCRR("admitted", time.Minute, "sidecar"))
	f.sync(t)
	assert.Equal(t, []string{"stop " + sideID}, f.rt.calls())
}

// The controller completes the CRR (its deadline, say) while the preStop
// hook runs: the hook returns at once and nothing is stopped.
func TestCancelledMidKill(t *testing.T) {
	crr := newCRR("r", time.Minute, "main")
	f := newFixture(t, runningPod(gen.SetPodContainerPreStop("main", execHook("sleep", "100"))), crr)
	f.rt.execFn = func(ctx context.Context) (cri.ExecResult, error) {
		done := f.get(t, "r").DeepCopy()
		done.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
		done.Status.Message = "exceeded activeDeadlineSeconds (3s)"
		done, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(context.Background(), done, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.NoError(t, f.ex.crrIndexer.Update(done))
		f.ex.crrUpdated(nil, done) // what the informer delivers
		<-ctx.Done()
		return cri.ExecResult{}, ctx.Err()
	}
	f.sync(t)
	assert.Equal(t, []string{"exec " + mainID}, f.rt.calls(), "no StopContainer after cancellation")
	assert.Equal(t, "Recreating", states(f.get(t, "r"))["main"], "not marked killed")
	assert.Equal(t, 1.0, f.completedTotal(outcomeCancelled))
}

func TestConflictRequeues(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	f.kruise.PrependReactor("update", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "containerrecreaterequests"}, "r", errors.New("changed"))
	})
	_, ctx := ktesting.NewTestContext(t)
	f.ex.queue.Add(podKeyT)
	require.True(t, f.ex.processNextWorkItem(ctx))
	assert.Equal(t, 1, f.ex.queue.NumRequeues(podKeyT))
	assert.Empty(t, f.rt.calls(), "nothing is stopped before Recreating is recorded")
}

// The write that records isKilled fails (the API server was unreachable)
// and the kubelet replaces the container before the next sync: the request
// still completes with isKilled, which only this daemon's memory knows.
func TestKilledRecordedAfterLostWrite(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	lost := 0
	f.kruise.PrependReactor("update", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		crr := a.(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.ContainerRecreateRequest)
		if lost == 0 && states(crr)["main"] == "Recreating/killed" {
			lost++
			return true, nil, apierrors.NewServiceUnavailable("the API server is down")
		}
		return false, nil, nil
	})
	_, err := f.syncAll(t)
	require.Error(t, err, "the lost write is an error: the pod is synced again")
	require.Equal(t, 1, lost)
	assert.Equal(t, map[string]string{"main": "Recreating"}, states(f.get(t, "r")), "as stored: isKilled lost")

	kubeletRestarts(t, f, "main", "ccc", tNow, true)
	f.sync(t)
	got := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Equal(t, map[string]string{"main": "Succeeded/killed"}, states(got))
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls(), "stopped once")
}

// The daemon died after StopContainer returned but before isKilled was
// written: a new executor sees the recorded instance exited and does not
// stop anything again, then finishes the request.
func TestRestartMidCRRDoesNotStopTwice(t *testing.T) {
	crr := newCRR("r", time.Minute, "main")
	crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
	crr.Status.ContainerRecreateStates = []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{
		{Name: "main", Phase: appsv1alpha1.ContainerRecreateRequestRecreating},
	}
	f := newFixture(t, runningPod(), crr)
	f.rt.containers[0].State = cri.ContainerExited // stopped by the previous daemon
	f.sync(t)
	assert.Empty(t, f.rt.calls())

	kubeletRestarts(t, f, "main", "ccc", tNow, true)
	f.sync(t)
	got := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Empty(t, f.rt.calls())
	assert.Zero(t, f.recreateObservations(), "a kill the previous daemon began is not timed")
}

// Restarted daemon, and the kubelet already replaced the instance (pod
// status shows the new one): still no second stop, even with force.
func TestRestartAfterKilledWithForce(t *testing.T) {
	crr := gen.CRRFrom(newCRR("r", time.Minute, "main"), gen.SetCRRForceRecreate(true))
	crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
	crr.Status.ContainerRecreateStates = []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{
		{Name: "main", Phase: appsv1alpha1.ContainerRecreateRequestRecreating},
	}
	f := newFixture(t, runningPod(), crr)
	f.rt.containers[0].State = cri.ContainerExited
	kubeletRestarts(t, f, "main", "ccc", tNow, false)
	f.sync(t)
	assert.Empty(t, f.rt.calls())
}

func TestPodReplacedOrGoneIsLeftToTheController(t *testing.T) {
	pod := runningPod(func(p *corev1.Pod) { p.UID = "other" })
	f := newFixture(t, pod, newCRR("r", time.Minute, "main"))
	f.sync(t)
	assert.Empty(t, f.rt.calls())
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, f.get(t, "r").Status.Phase)
}

func TestHandlers(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	other := runningPod(func(p *corev1.Pod) { p.Name = "other" })
	f.ex.podChanged(other)
	assert.Zero(t, f.ex.queue.Len(), "a pod without CRRs is not queued")
	f.ex.podChanged(runningPod())
	assert.Equal(t, 1, f.ex.queue.Len())
}

// A kill that takes its whole grace period (here a preStop hook that does
// not return) does not hold a worker: with a single worker, another pod's
// CRR on the node is carried out meanwhile, and the slow one finishes when
// its hook does.
func TestLongKillDoesNotHoldTheWorker(t *testing.T) {
	slow := runningPod(gen.SetPodContainerPreStop("main", execHook("drain")))
	other := runningPod(func(p *corev1.Pod) {
		p.Name, p.UID = "other", "other-uid"
		p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1]
		p.Status.ContainerStatuses[0].ContainerID = "containerd://ccc"
	})
	otherCRR := newCRR("o", time.Minute, "main")
	otherCRR.Spec.PodName = "other"
	otherCRR.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] = "other-uid"
	otherCRR.Spec.Containers[0].StatusContext.ContainerID = "containerd://ccc"
	f := newFixture(t, slow, newCRR("r", time.Minute, "main"), otherCRR)
	f.setPod(t, other)
	f.rt.containers = append(f.rt.containers, cri.Container{ID: "ccc", Name: "main", State: cri.ContainerRunning, PodUID: "other-uid"})

	release := make(chan struct{})
	inHook := make(chan struct{})
	f.rt.execFn = func(ctx context.Context) (cri.ExecResult, error) {
		close(inHook)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return cri.ExecResult{}, nil
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = f.ex.Run(ctx, 1)
	}()
	t.Cleanup(func() {
		cancel()
		<-runDone
	})
	f.ex.queue.Add(podKeyT)
	<-inHook
	f.refresh(t) // as the informer would: the slow CRR is Recreating
	f.ex.queue.Add(ns + "/other")
	require.Eventually(t, func() bool { return slices.Contains(f.rt.calls(), "stop ccc") }, 10*time.Second, 10*time.Millisecond,
		"the other pod's container is stopped while the slow hook runs: %v", f.rt.calls())
	assert.NotContains(t, f.rt.calls(), "stop "+mainID, "the slow kill is still in its hook")

	close(release)
	require.Eventually(t, func() bool { return slices.Contains(f.rt.calls(), "stop "+mainID) }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		f.refresh(t)
		return states(f.get(t, "r"))["main"] == "Recreating/killed"
	}, 10*time.Second, 10*time.Millisecond, "the slow kill is recorded once it returns")
}
