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
