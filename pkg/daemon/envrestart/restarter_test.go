package envrestart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// The label changed from stable to canary: the container is stopped once,
// the kubelet's new instance reads canary, and nothing more happens.
func TestStaleEnvRestartsOnce(t *testing.T) {
	pod := updatingPod("canary", "team-a")
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.addContainer("plain", "plain-1", containerdInfo(map[string]string{"A": "b"}, nil))

	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops(), "the stale container, once")
	assert.Equal(t, int64(5), f.rt.StopCalls()[0].Timeout, "the pod's grace period, as the CRR executor gives it")
	assert.Equal(t, []string{"Normal " + ReasonRestarted + " Stopped container app (app-1) for the kubelet to start it again: " +
		"env TRACK comes from pod metadata that changed"}, f.events())
	assert.Equal(t, 1.0, f.restarts(resultRestarted))

	// The pod's status still names the stopped instance: nothing more.
	require.NoError(t, f.syncAll(t))
	// The kubelet starts the new instance, which resolved canary.
	f.addContainer("app", "app-2", createdWith("canary", "team-a"))
	f.setPod(t, gen.PodFrom(pod, gen.SetPodContainerStatus(runningStatus("app", "app-2"))))
	require.NoError(t, f.syncAll(t))

	assert.Equal(t, []string{appID}, f.stops(), "still one stop")
	assert.Empty(t, f.events())
	assert.Empty(t, f.rt.ExecCalls(), "nothing is run in any container")
}

// A container found stale is stopped only once it has been so for settleDelay, giving the
// kubelet time to see the new labels too (else it starts the next container with the old ones).
func TestStaleEnvWaitsTheSettleDelay(t *testing.T) {
	f := newFixture(t, updatingPod("canary", "team-a"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	_, ctx := ktesting.NewTestContext(t)

	after, err := f.r.sync(ctx, podKey)
	require.NoError(t, err)
	assert.Equal(t, settleDelay, after, "look again once the delay has passed")
	assert.Empty(t, f.stops(), "not at first sight")

	f.clock.Step(settleDelay / 2)
	after, err = f.r.sync(ctx, podKey)
	require.NoError(t, err)
	assert.Equal(t, settleDelay/2, after, "the delay counts from the first sight")
	assert.Empty(t, f.stops())

	f.clock.Step(settleDelay / 2)
	_, err = f.r.sync(ctx, podKey)
	require.NoError(t, err)
	f.r.stops.Wait()
	assert.Equal(t, []string{appID}, f.stops(), "stopped once the delay has passed")
}

func TestUpToDateEnvRestartsNothing(t *testing.T) {
	f := newFixture(t, updatingPod("stable", "team-a"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))

	require.NoError(t, f.syncAll(t))
	assert.Empty(t, f.stops())
	assert.Empty(t, f.events())
	assert.Zero(t, f.restarts(resultRestarted))
}

// An annotation counts as a label does.
func TestStaleAnnotationRestarts(t *testing.T) {
	f := newFixture(t, updatingPod("stable", "team-b"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))

	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
	assert.Contains(t, f.events()[0], "env OWNER comes from pod metadata")
}

// Only the env vars filled from metadata are compared: the image's own
// env, and env of the pod spec that is not a fieldRef, never restart a
// container, whatever their values and however the runtime reports them.
func TestEnvNotFromMetadataIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name string
		info map[string]string
	}{
		{"containerd: the image sets OWNER and TRACK2", containerdInfo(
			map[string]string{"TRACK": "stable", "OWNER": "team-a", "PLAIN": "x"},
			map[string]string{"TRACK2": "image", "NOT_IN_SPEC": "image"})},
		{"CRI-O: the image's env is in the OCI spec", crioInfo("TRACK=stable", "OWNER=team-a", "PLAIN=x", "TRACK2=image", "NOT_IN_SPEC=image")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// TRACK2 is plain env in the spec (no fieldRef) with a value the
			// label "track2" would change; NOT_IN_SPEC is the image's.
			pod := updatingPod("stable", "team-a", func(p *corev1.Pod) {
				p.Labels["track2"] = "changed"
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "TRACK2", Value: "spec"})
			})
			f := newFixture(t, pod)
			f.addContainer("app", appID, tc.info)

			require.NoError(t, f.syncAll(t))
			assert.Empty(t, f.stops())
			assert.Empty(t, f.events())
		})
	}
}

// CRI-O gives the OCI spec only: its env, the image's merged under the
// kubelet's, is enough to see a stale label.
func TestCRIOStaleEnvRestarts(t *testing.T) {
	f := newFixture(t, updatingPod("canary", "team-a"))
	f.addContainer("app", appID, crioInfo("TRACK=stable", "OWNER=team-a", "PLAIN=x", "PATH=/usr/bin"))

	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
}

// Outside an update in progress nothing is looked at, whatever the env.
func TestNoUpdateInProgressNoAction(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  gen.PodModifier
	}{
		{"InPlaceUpdateReady True", gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})},
		{"no InPlaceUpdateReady condition", func(p *corev1.Pod) { p.Status.Conditions = nil }},
		{"no in-place update state", func(p *corev1.Pod) { delete(p.Annotations, pub.InPlaceUpdateStateKey) }},
		{"the update does not change env from metadata", gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r","updateImages":true}`})},
		{"a state that does not decode", gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: `{"updateEnvFromMetadata":`})},
		{"the pod is being deleted", gen.SetPodDeletionTimestamp(tNow)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, updatingPod("canary", "team-a", tc.mod))
			f.addContainer("app", appID, createdWith("stable", "team-a"))
			var calls []string
			f.rt.OnCall(func(method, id string) { calls = append(calls, method) })

			require.NoError(t, f.syncAll(t))
			assert.Empty(t, calls, "not even a status call")
			assert.Empty(t, f.events())
		})
	}
}

// OpenKruise's annotation key before v0.9 is read too.
func TestOldStateKey(t *testing.T) {
	pod := updatingPod("canary", "team-a", func(p *corev1.Pod) {
		p.Annotations[pub.InPlaceUpdateStateKeyOld] = p.Annotations[pub.InPlaceUpdateStateKey]
		delete(p.Annotations, pub.InPlaceUpdateStateKey)
	})
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
}

// Between instances (the kubelet has not started the new one yet) nothing
// is stopped, and nothing is retried: the kubelet's status update brings
// the pod back.
func TestContainerNotRunningWaits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  corev1.ContainerStatus
		runtime runtimeapiState
	}{
		{"waiting in the pod's status", corev1.ContainerStatus{Name: "app", ContainerID: "containerd://" + appID,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}, running},
		{"terminated in the pod's status", corev1.ContainerStatus{Name: "app", ContainerID: "containerd://" + appID,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}}, exited},
		{"no instance yet", corev1.ContainerStatus{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}, running},
		{"running in a stale status, exited in the runtime", runningStatus("app", appID), exited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, updatingPod("canary", "team-a", gen.SetPodContainerStatus(tc.status)))
			f.addContainer("app", appID, createdWith("stable", "team-a"))
			if tc.runtime == exited {
				setState(f.rt, appID, exited)
			}

			require.NoError(t, f.syncAll(t))
			assert.Empty(t, f.stops())
			assert.Empty(t, f.events())
		})
	}
}

// A runtime that cannot answer is no reason to restart: the pod is retried
// with backoff, and the container left alone.
func TestRuntimeErrorRequeuesWithoutRestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		event string // "" for none: the runtime's trouble is logged
	}{
		{"runtime unavailable", func(f *fixture) {
			f.addContainer("app", appID, createdWith("stable", "team-a"))
			f.rt.SetCallError("ContainerStatus", status.Error(codes.Unavailable, "connection refused"))
		}, ""},
		{"container not found", func(f *fixture) {}, "Warning " + ReasonEnvUnknown + " cannot read container app (app-1) from the container runtime"},
		{"no verbose info (cri-dockerd)", func(f *fixture) { f.addContainer("app", appID, nil) },
			"Warning " + ReasonEnvUnknown + " cannot tell the env container app (app-1) was created with"},
		{"env var missing from the runtime's record", func(f *fixture) {
			f.addContainer("app", appID, containerdInfo(map[string]string{"TRACK": "stable"}, nil))
		}, "Warning " + ReasonEnvUnknown + " the runtime's record of container app (app-1, config.envs) has no env var OWNER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, updatingPod("canary", "team-a"))
			tc.setup(f)
			_, ctx := ktesting.NewTestContext(t)

			f.r.queue.Add(podKey)
			require.True(t, f.r.loop().ProcessNext(ctx))
			assert.Equal(t, 1, f.r.queue.NumRequeues(podKey), "retried with backoff")
			assert.Empty(t, f.stops())
			events := f.events()
			if tc.event == "" {
				assert.Empty(t, events)
				assert.Zero(t, f.restarts(resultUnknown))
			} else {
				require.Len(t, events, 1)
				assert.Contains(t, events[0], tc.event)
				assert.Equal(t, 1.0, f.restarts(resultUnknown))
			}

			// A retry of the same trouble says nothing more.
			require.Error(t, f.syncAll(t))
			assert.Empty(t, f.events())
			assert.Empty(t, f.stops())
		})
	}
}

// Once the runtime answers again, the retry restarts the container.
func TestRuntimeBackRestarts(t *testing.T) {
	f := newFixture(t, updatingPod("canary", "team-a"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.rt.SetCallError("ContainerStatus", status.Error(codes.Unavailable, "connection refused"))
	require.Error(t, f.syncAll(t))
	f.rt.SetCallError("ContainerStatus", nil)
	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
}

// A distroless image has no env binary (nor a shell): exec'ing env in it
// fails. Nothing is exec'd, so its container is restarted all the same.
func TestDistrolessContainerNeedsNoExec(t *testing.T) {
	f := newFixture(t, updatingPod("canary", "team-a"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.rt.SetExecScript(appID, critest.ExecScript{Err: status.Error(codes.Unknown,
		`failed to exec in container: exec: "env": executable file not found in $PATH`)})

	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
	assert.Empty(t, f.rt.ExecCalls(), "no ExecSync call")
}

// A stop runs the container's preStop hook, as a CRR's does.
func TestStopRunsPreStopHook(t *testing.T) {
	hook := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/drain"}}}
	f := newFixture(t, updatingPod("canary", "team-a", gen.SetPodContainerPreStop("app", hook)))
	f.addContainer("app", appID, createdWith("stable", "team-a"))

	require.NoError(t, f.syncAll(t))
	require.Len(t, f.rt.ExecCalls(), 1, "the hook, and nothing else")
	assert.Equal(t, []string{"/drain"}, f.rt.ExecCalls()[0].Cmd)
	assert.Equal(t, []string{appID}, f.stops())
}

// A stop under way (a long preStop hook, say) is not started again by the
// syncs that come meanwhile.
func TestStopUnderWayIsNotRepeated(t *testing.T) {
	f := newFixture(t, updatingPod("canary", "team-a"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	arrived := make(chan struct{}, 4)
	f.rt.OnCall(func(method, _ string) {
		if method == "StopContainer" {
			arrived <- struct{}{}
		}
	})
	f.rt.HangCall("StopContainer", true)
	_, ctx := ktesting.NewTestContext(t)

	_, err := f.r.sync(ctx, podKey) // first sight: waits the settle delay
	require.NoError(t, err)
	f.clock.Step(settleDelay)
	_, err = f.r.sync(ctx, podKey)
	require.NoError(t, err)
	<-arrived
	for range 3 {
		_, err := f.r.sync(ctx, podKey)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), f.r.stopsStarted.Load())

	f.rt.HangCall("StopContainer", false)
	f.r.stops.Wait()
	assert.Equal(t, []string{appID}, f.stops())
}

// A daemon restarted after the stop remembers nothing, and still stops
// nothing more: the runtime says the instance is not running.
func TestRestartedDaemonDoesNotStopAgain(t *testing.T) {
	pod := updatingPod("canary", "team-a")
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	require.NoError(t, f.syncAll(t))
	require.Equal(t, []string{appID}, f.stops())

	f.restartDaemon(t)
	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
	assert.Empty(t, f.rt.ExecCalls())
}

func TestStopFailureIsRetried(t *testing.T) {
	f := newFixture(t, updatingPod("canary", "team-a"))
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.rt.SetCallError("StopContainer", status.Error(codes.Internal, "shim gone"))
	_, ctx := ktesting.NewTestContext(t)

	_, err := f.r.sync(ctx, podKey) // first sight: waits the settle delay
	require.NoError(t, err)
	f.clock.Step(settleDelay)
	_, err = f.r.sync(ctx, podKey)
	require.NoError(t, err, "the stop runs apart; its end asks for the retry")
	f.r.stops.Wait()
	assert.Equal(t, 1.0, f.restarts(resultFailed))
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonRestartFailed+" Stopping container app (app-1) failed")
	assert.Equal(t, 1, f.r.queue.NumRequeues(podKey), "retried with backoff")

	f.rt.SetCallError("StopContainer", nil)
	require.NoError(t, f.syncAll(t))
	// (The fake records only the calls it answers, not the failed one.)
	assert.Equal(t, []string{appID}, f.stops(), "stopped on the retry")
	assert.Equal(t, 1.0, f.restarts(resultRestarted))
}

// A stop could end a container of a pod that does not always restart.
func TestRestartPolicyNotAlwaysSkips(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			f := newFixture(t, updatingPod("canary", "team-a", gen.SetPodRestartPolicy(policy)))
			f.addContainer("app", appID, createdWith("stable", "team-a"))

			require.NoError(t, f.syncAll(t))
			require.NoError(t, f.syncAll(t))
			assert.Empty(t, f.stops())
			events := f.events()
			require.Len(t, events, 1, "said once")
			assert.Contains(t, events[0], "Warning "+ReasonRestartSkipped+" env TRACK of container app")
			assert.Equal(t, 1.0, f.restarts(resultSkipped))
		})
	}
}

// Only pods under an env update, or remembered, are queued; a deleted pod
// is forgotten.
func TestEventHandlers(t *testing.T) {
	pod := updatingPod("canary", "team-a")
	f := newFixture(t, pod)
	done := gen.PodFrom(pod, gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}))

	f.r.podChanged(done)
	assert.Zero(t, f.r.queue.Len(), "nothing to do")
	f.r.podChanged(pod)
	assert.Equal(t, 1, f.r.queue.Len())

	require.True(t, f.r.mem.beginStop(podKey, pod.UID, appID))
	f.r.mem.endStop(podKey, pod.UID, appID, true)
	key, _ := f.r.queue.Get()
	f.r.queue.Done(key)
	f.r.podChanged(done)
	assert.Equal(t, 1, f.r.queue.Len(), "remembered: queued to be forgotten")

	f.r.podDeleted(pod)
	assert.False(t, f.r.mem.has(podKey))
}
