package podbudget

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestAvailable(t *testing.T) {
	// An update that recorded container "app" as running "old": done once another container runs.
	updating := gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":"2026-11-29T11:00:00Z","lastContainerStatuses":{"app":{"imageID":"img@sha256:1","containerID":"containerd://old"}}}`})
	// A SidecarSet's upgrade that recorded its sidecar "app" as running "old".
	sidecarUpgrading := gen.AddPodAnnotations(map[string]string{sidecarrules.InPlaceUpdateStateAnnotation: `{"logs":{"revision":"r2","updateTimestamp":"2026-11-29T11:00:00Z","lastContainerStatuses":{"app":{"imageID":"img@sha256:1","containerID":"containerd://old"}}}}`})
	status := func(id string) gen.PodModifier {
		return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ContainerID: id, Image: "img@sha256:2", ImageID: "docker.io/library/img@sha256:2", Ready: true})
	}
	for name, tc := range map[string]struct {
		pod            *corev1.Pod
		protectUnready bool
		want           bool
	}{
		"running and ready":         {pod: readyPod("p"), want: true},
		"pending":                   {pod: readyPod("p", gen.SetPodPhase(corev1.PodPending))},
		"not ready":                 {pod: readyPod("p", notReady)},
		"not ready, protected":      {pod: readyPod("p", notReady), protectUnready: true, want: true},
		"pending, protected":        {pod: readyPod("p", notReady, gen.SetPodPhase(corev1.PodPending)), protectUnready: true},
		"deleting":                  {pod: readyPod("p", gen.SetPodDeletionTimestamp(t0))},
		"specified-delete (#2175)":  {pod: readyPod("p", gen.AddPodLabels(map[string]string{appsv1beta1.SpecifiedDeleteKey: "true"}))},
		"unavailable label":         {pod: readyPod("p", gen.AddPodLabels(map[string]string{"unavailable-pod.kruise.io/drain": "x"}))},
		"in-place gate false":       {pod: readyPod("p", gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}))},
		"lifecycle updating":        {pod: readyPod("p", gen.SetPodLifecycleState(pub.LifecycleStateUpdating))},
		"in-place update under way": {pod: readyPod("p", updating, status("containerd://old"))},
		"in-place update done, image pinned by digest (#2570)": {pod: readyPod("p", updating, status("containerd://new")), want: true},
		"unreadable update state":                              {pod: readyPod("p", gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: "{"}))},
		"SidecarSet upgrade under way":                         {pod: readyPod("p", sidecarUpgrading, status("containerd://old"))},
		"SidecarSet upgrade done":                              {pod: readyPod("p", sidecarUpgrading, status("containerd://new")), want: true},
		"unreadable SidecarSet upgrade state":                  {pod: readyPod("p", gen.AddPodAnnotations(map[string]string{sidecarrules.InPlaceUpdateStateAnnotation: "["}))},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Available(tc.pod, tc.protectUnready))
		})
	}
}
