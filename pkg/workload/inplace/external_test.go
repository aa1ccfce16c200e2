package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

func nativeSidecarPod(initStatus corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:2", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
			Containers:     []corev1.Container{{Name: "app", Image: "app:1"}},
		},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{initStatus},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", ImageID: "sha-app1", ContainerID: "cri://app-1"}},
		},
	}
}

func TestLastStatusesAndStateDoneForNativeSidecars(t *testing.T) {
	before := nativeSidecarPod(corev1.ContainerStatus{Name: "proxy", ImageID: "sha-proxy1", ContainerID: "cri://proxy-1"})
	last := LastStatuses(before, []string{"proxy", "missing"})
	assert.Equal(t, map[string]pub.InPlaceUpdateContainerStatus{
		"proxy":   {ImageID: "sha-proxy1", ContainerID: "cri://proxy-1"},
		"missing": {},
	}, last)

	state := &pub.InPlaceUpdateState{LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"proxy": last["proxy"]}}
	done, waiting := StateDone(before, state)
	assert.False(t, done, "the native sidecar still runs its old container")
	assert.Equal(t, "container proxy has not been restarted yet", waiting)

	after := nativeSidecarPod(corev1.ContainerStatus{Name: "proxy", ImageID: "sha-proxy2", ContainerID: "cri://proxy-2"})
	done, waiting = StateDone(after, state)
	assert.True(t, done, waiting)

	state.NextContainerImages = map[string]string{"app": "app:2"}
	done, waiting = StateDone(after, state)
	assert.False(t, done)
	assert.Equal(t, "later batches", waiting)

	done, _ = StateDone(before, nil)
	assert.True(t, done, "no state is nothing to wait for")
}
