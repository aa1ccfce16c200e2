package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestContainersDone(t *testing.T) {
	recorded := func(imageID, containerID string) *pub.InPlaceUpdateState {
		return &pub.InPlaceUpdateState{LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{
			"app": {ImageID: imageID, ContainerID: containerID}}}
	}
	app := func(image, imageID, containerID string) gen.PodModifier {
		return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: image, ImageID: imageID, ContainerID: containerID})
	}
	pod := func(mods ...gen.PodModifier) *corev1.Pod {
		base := []gen.PodModifier{gen.SetPodContainers(gen.Container("app", gen.SetContainerImage("reg:5000/app:2"),
			gen.SetContainerResources(res("2", "1Gi"), res("2", "1Gi"))))}
		return gen.Pod("web", append(base, mods...)...)
	}
	withResources := func(s *pub.InPlaceUpdateState) *pub.InPlaceUpdateState { s.UpdateResources = true; return s }
	reported := func(requests, limits corev1.ResourceList) gen.PodModifier {
		return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ContainerID: "c1",
			Resources: &corev1.ResourceRequirements{Requests: requests, Limits: limits}})
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		state   *pub.InPlaceUpdateState
		done    bool
		waiting string
	}{
		{name: "retag: same image ID, new container", pod: pod(app("reg:5000/app:2", "sha1", "c2")), state: recorded("sha1", "c1"), done: true},
		{name: "new image ID and container", pod: pod(app("reg:5000/app:2", "sha2", "c2")), state: recorded("sha1", "c1"), done: true},
		{name: "not restarted yet", pod: pod(app("reg:5000/app:1", "sha1", "c1")), state: recorded("sha1", "c1"),
			waiting: "container app has not been restarted yet"},
		{name: "no status", pod: pod(), state: recorded("sha1", "c1"), waiting: "container app has no status yet"},
		{name: "restarted but not started yet", pod: pod(app("", "", "")), state: recorded("sha1", "c1"),
			waiting: "container app has not been restarted yet"},
		{name: "legacy state: new image ID", pod: pod(app("reg:5000/app:2", "sha2", "c1")), state: recorded("sha1", ""), done: true},
		{name: "legacy state: same image ID, old image reported", pod: pod(app("reg:5000/app:1", "sha1", "c1")), state: recorded("sha1", ""),
			waiting: "container app has not been restarted yet"},
		{name: "legacy state: same image ID, new image reported", pod: pod(app("reg:5000/app:2", "sha1", "c2")), state: recorded("sha1", ""), done: true},
		{name: "env restart: new container", pod: pod(app("reg:5000/app:2", "sha2", "c9")), state: recorded("sha2", "c1"), done: true},
		{name: "resize applied", pod: pod(reported(res("2", "1Gi"), res("2", "1Gi"))), state: withResources(&pub.InPlaceUpdateState{}), done: true},
		{name: "resize not applied", pod: pod(reported(res("1", "1Gi"), res("1", "1Gi"))), state: withResources(&pub.InPlaceUpdateState{}),
			waiting: "container app: resize not applied yet"},
		{name: "resize infeasible", pod: pod(reported(res("1", "1Gi"), res("1", "1Gi")), gen.SetPodCondition(corev1.PodCondition{
			Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: "Infeasible", Message: "Node didn't have enough capacity"})),
			state: withResources(&pub.InPlaceUpdateState{}), waiting: "container app: resize pending (Infeasible: Node didn't have enough capacity)"},
		{name: "resources not reported", pod: pod(app("reg:5000/app:2", "sha1", "c1")), state: withResources(&pub.InPlaceUpdateState{}),
			waiting: "container app reports no resources yet"},
		{name: "a container without resources may report none", state: withResources(&pub.InPlaceUpdateState{}), done: true,
			pod: gen.Pod("web", gen.SetPodContainers(gen.Container("app")), gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app"}))},
		{name: "nothing recorded", pod: pod(), state: &pub.InPlaceUpdateState{}, done: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done, waiting := containersDone(tc.pod, tc.state)
			assert.Equal(t, tc.done, done)
			assert.Equal(t, tc.waiting, waiting)
		})
	}
}

func TestSameImage(t *testing.T) {
	assert.True(t, sameImage("nginx", "nginx:latest"))
	assert.True(t, sameImage("reg:5000/nginx", "reg:5000/nginx:latest"))
	assert.False(t, sameImage("reg:5000/nginx", "reg:5000/nginx:1"))
	assert.True(t, sameImage("nginx@sha256:ab", "nginx@sha256:ab"))
}

// The gate of an image update is released to the kubelet only once it has synced the new spec;
// never for updates it does not restart itself.
func TestKubeletRestarting(t *testing.T) {
	state := func(mod func(*pub.InPlaceUpdateState)) *pub.InPlaceUpdateState {
		s := &pub.InPlaceUpdateState{UpdateImages: true, LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{
			"app": {ImageID: "sha1", ContainerID: "c1"}, "log": {ImageID: "sha3", ContainerID: "l1"}}}
		if mod != nil {
			mod(s)
		}
		return s
	}
	app := func(containerID string, ready bool) gen.PodModifier {
		return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "reg:5000/app:1", ImageID: "sha1", ContainerID: containerID, Ready: ready})
	}
	logRestarted := gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "log", ImageID: "sha4", ContainerID: "l2", Ready: true})
	pod := func(mods ...gen.PodModifier) *corev1.Pod {
		base := []gen.PodModifier{gen.SetPodContainers(gen.Container("app", gen.SetContainerImage("reg:5000/app:2")),
			gen.Container("log", gen.SetContainerImage("reg:5000/log:2"))), logRestarted, gen.SetPodGeneration(3, 3)}
		return gen.Pod("web", append(base, mods...)...)
	}
	cases := []struct {
		name  string
		pod   *corev1.Pod
		state *pub.InPlaceUpdateState
		want  bool
	}{
		{name: "synced, old container stopped", pod: pod(app("c1", false)), state: state(nil), want: true},
		{name: "synced, old container still reported ready", pod: pod(app("c1", true)), state: state(nil), want: true},
		{name: "new generation not synced yet", pod: pod(app("c1", false), gen.SetPodGeneration(3, 2)), state: state(nil)},
		{name: "kubelet reports no generation (before 1.34)", pod: pod(app("c1", false), gen.SetPodGeneration(3, 0)), state: state(nil)},
		{name: "API server sets no generation", pod: pod(app("c1", false), gen.SetPodGeneration(0, 0)), state: state(nil)},
		{name: "new container already running", pod: pod(app("c2", false)), state: state(nil), want: true},
		{name: "container status not reported yet", pod: gen.Pod("web", logRestarted, gen.SetPodGeneration(3, 3)), state: state(nil)},
		{name: "old container ID not recorded (OpenKruise's state)", pod: pod(app("c1", false)), want: true,
			state: state(func(s *pub.InPlaceUpdateState) {
				s.LastContainerStatuses["app"] = pub.InPlaceUpdateContainerStatus{ImageID: "sha1"}
			})},
		{name: "env from metadata: the daemon restarts, not the kubelet", pod: pod(app("c1", false)),
			state: state(func(s *pub.InPlaceUpdateState) { s.UpdateEnvFromMetadata = true })},
		{name: "resize", pod: pod(app("c1", false)), state: state(func(s *pub.InPlaceUpdateState) { s.UpdateResources = true })},
		{name: "no image change", pod: pod(app("c1", false)), state: state(func(s *pub.InPlaceUpdateState) { s.UpdateImages = false })},
		{name: "a later batch follows", pod: pod(app("c1", false)),
			state: state(func(s *pub.InPlaceUpdateState) { s.NextContainerImages = map[string]string{"side": "side:2"} })},
		{name: "nothing recorded", pod: pod(app("c1", false)),
			state: state(func(s *pub.InPlaceUpdateState) { s.LastContainerStatuses = nil })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, kubeletRestarting(tc.pod, tc.state))
		})
	}
}

// A released gate is taken back only when the pod is Ready while a container the update
// replaces is still the old one.
func TestReadyOnOldContainer(t *testing.T) {
	state := &pub.InPlaceUpdateState{UpdateImages: true, LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{
		"app": {ImageID: "sha1", ContainerID: "c1"}}}
	pod := func(containerID string, ready corev1.ConditionStatus) *corev1.Pod {
		return gen.Pod("web", gen.SetPodContainers(gen.Container("app", gen.SetContainerImage("reg:5000/app:2"))),
			gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ImageID: "sha1", ContainerID: containerID, Ready: true}),
			gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: ready}))
	}
	assert.True(t, readyOnOldContainer(pod("c1", corev1.ConditionTrue), state))
	assert.False(t, readyOnOldContainer(pod("c1", corev1.ConditionFalse), state), "not Ready")
	assert.False(t, readyOnOldContainer(pod("c2", corev1.ConditionTrue), state), "Ready on the new container")
}
