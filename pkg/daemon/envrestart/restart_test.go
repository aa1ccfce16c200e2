package envrestart

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// withRestartState gives the pod an update state restarting the named containers (the restart
// annotation changed), each marked with the instance that ran before, and app given a new image.
func withRestartState(restarts map[string]string) gen.PodModifier {
	return func(p *corev1.Pod) {
		last := map[string]pub.InPlaceUpdateContainerStatus{"app": {ContainerID: "containerd://" + appID}}
		for name, id := range restarts {
			last[name] = pub.InPlaceUpdateContainerStatus{ContainerID: "containerd://" + id, Restart: true}
		}
		state, err := json.Marshal(pub.InPlaceUpdateState{Revision: "rev-2", UpdateEnvFromMetadata: true, UpdateImages: true,
			LastContainerStatuses: last})
		if err != nil {
			panic(err)
		}
		p.Annotations[pub.InPlaceUpdateStateKey] = string(state)
		p.Annotations[pub.RestartedAtAnnotationKey] = "2025-03-04T05:00:00Z"
	}
}

// A container the update marks for a restart reads no metadata as env: its recorded instance is
// stopped at once (nothing to settle), once; app, whose env is current and which the update
// gives a new image (the kubelet restarts it), is not touched.
func TestRestartMarkedContainerStopsOnce(t *testing.T) {
	pod := updatingPod("stable", "team-a", withRestartState(map[string]string{"plain": "plain-1"}))
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.addContainer("plain", "plain-1", containerdInfo(map[string]string{"A": "b"}, nil))
	_, ctx := ktesting.NewTestContext(t)

	after, err := f.r.sync(ctx, podKey)
	require.NoError(t, err)
	f.r.stops.Wait()
	assert.Zero(t, after, "no settle delay for a container that reads no metadata")
	assert.Equal(t, []string{"plain-1"}, f.stops())
	assert.Equal(t, []string{"Normal " + ReasonRestartedForUpdate + " Stopped container plain (plain-1) for the kubelet to start it again: " +
		"the pod's in-place update restarts it (kubectl.kubernetes.io/restartedAt changed)"}, f.events())
	assert.Equal(t, 1.0, f.restarts(resultRestarted))

	// The status still names the stopped instance, then the kubelet's new one: nothing more.
	require.NoError(t, f.syncAll(t))
	f.setPod(t, gen.PodFrom(pod, gen.SetPodContainerStatus(runningStatus("plain", "plain-2"))))
	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{"plain-1"}, f.stops(), "still one stop")
	assert.Empty(t, f.events())
}

// A marked container already running a new instance (it crashed and the kubelet restarted it,
// or a daemon before this one stopped it) is restarted: nothing is stopped.
func TestRestartMarkedContainerAlreadyNew(t *testing.T) {
	pod := updatingPod("stable", "team-a", withRestartState(map[string]string{"plain": "plain-0"}))
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.addContainer("plain", "plain-1", containerdInfo(map[string]string{"A": "b"}, nil))

	require.NoError(t, f.syncAll(t))
	assert.Empty(t, f.stops())
	assert.Empty(t, f.events())
}

// A marked container that also reads metadata as env waits the settle delay as any stale one, is
// stopped once, and its new instance's env is then checked as usual.
func TestRestartMarkedContainerReadingMetadataWaitsSettle(t *testing.T) {
	pod := updatingPod("stable", "team-a", withRestartState(map[string]string{"app": appID}))
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	_, ctx := ktesting.NewTestContext(t)

	after, err := f.r.sync(ctx, podKey)
	require.NoError(t, err)
	assert.Equal(t, settleDelay, after)
	assert.Empty(t, f.stops(), "not before the kubelet has had time to see the metadata")

	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops())
	assert.Contains(t, f.events()[0], ReasonRestartedForUpdate)

	f.addContainer("app", "app-2", createdWith("stable", "team-a"))
	f.setPod(t, gen.PodFrom(pod, gen.SetPodContainerStatus(runningStatus("app", "app-2"))))
	require.NoError(t, f.syncAll(t))
	assert.Equal(t, []string{appID}, f.stops(), "the new instance's env is current: no second stop")
}

// A pod that may not restart its containers keeps them, with a Warning, once.
func TestRestartMarkedContainerRestartPolicyNotAlways(t *testing.T) {
	pod := updatingPod("stable", "team-a", withRestartState(map[string]string{"plain": "plain-1"}),
		gen.SetPodRestartPolicy(corev1.RestartPolicyOnFailure))
	f := newFixture(t, pod)
	f.addContainer("app", appID, createdWith("stable", "team-a"))
	f.addContainer("plain", "plain-1", containerdInfo(map[string]string{"A": "b"}, nil))

	require.NoError(t, f.syncAll(t))
	require.NoError(t, f.syncAll(t))
	assert.Empty(t, f.stops())
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonRestartSkipped)
}
