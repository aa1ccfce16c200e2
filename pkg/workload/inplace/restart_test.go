package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func restartedAt(v string) change {
	return func(t *corev1.PodTemplateSpec) {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[pub.RestartedAtAnnotationKey] = v
	}
}

func restartMeta(v string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: map[string]string{pub.RestartedAtAnnotationKey: v}}
}

// `kubectl kruise rollout restart` stamps the template with kubectl.kubernetes.io/restartedAt:
// the plan restarts every regular container, as if each read the annotation as env (before,
// the annotation was a plain metadata patch and nothing restarted). Native sidecars and init
// containers are left.
func TestPlanRestartedAtRestartsEveryContainer(t *testing.T) {
	const at = "2026-11-29T10:00:00Z"
	for _, tc := range []struct {
		name     string
		old, new change
		want     *Spec
	}{{
		name: "stamped for the first time",
		new:  restartedAt(at),
		want: specWith(func(s *Spec) {
			s.ContainerRefMetadata["app"] = restartMeta(at)
			s.ContainerRefMetadata["log"] = restartMeta(at)
		}),
	}, {
		name: "stamped again",
		old:  restartedAt("2026-11-28T10:00:00Z"),
		new:  restartedAt(at),
		want: specWith(func(s *Spec) {
			s.ContainerRefMetadata["app"] = restartMeta(at)
			s.ContainerRefMetadata["log"] = restartMeta(at)
		}),
	}, {
		name: "with a new image: that container restarts for its image, the restart is recorded on both",
		new: func(t *corev1.PodTemplateSpec) {
			restartedAt(at)(t)
			containerNamed(t, "app").Image = "app:2"
		},
		want: specWith(func(s *Spec) {
			s.ContainerImages["app"] = "app:2"
			s.ContainerRefMetadata["app"] = restartMeta(at)
			s.ContainerRefMetadata["log"] = restartMeta(at)
		}),
	}, {
		name: "unchanged: nothing restarts",
		old:  restartedAt(at),
		new:  restartedAt(at),
		want: specWith(func(*Spec) {}),
	}, {
		name: "removed: a plain metadata change",
		old:  restartedAt(at),
		new:  func(*corev1.PodTemplateSpec) {},
		want: specWith(func(s *Spec) { s.Metadata.RemovedAnnotations = []string{pub.RestartedAtAnnotationKey} }),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := template(), template()
			if tc.old != nil {
				tc.old(old)
			}
			tc.new(new)
			got, err := Plan(old, new, Options{NativeSidecarImages: true, Resize: true})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A restart keeps the launch-priority batches: the annotation every container "reads" is not a
// key containers share (which would pull them all into the first batch).
func TestBatchesOfARestartKeepPriorities(t *testing.T) {
	pod := gen.Pod("web", gen.SetPodContainers(gen.Container("high", barrier(10)), gen.Container("low", barrier(0))))
	spec := specWith(func(s *Spec) {
		s.ContainerRefMetadata["high"] = restartMeta("t")
		s.ContainerRefMetadata["low"] = restartMeta("t")
	})
	assert.Equal(t, [][]string{{"high"}, {"low"}}, Batches(pod, spec))
}

// Each batch marks its containers for kruise-daemon to stop (Restart, with the instance to stop),
// except one the batch gives a new image: the kubelet restarts that one, and a second stop would
// run its preStop hook twice. The restart keeps the gate until every container is new.
func TestStartAndNextBatchMarkRestarts(t *testing.T) {
	spec := specWith(func(s *Spec) {
		s.ContainerImages["app"] = "app:2"
		s.ContainerRefMetadata["app"] = restartMeta("t")
		s.ContainerRefMetadata["log"] = restartMeta("t")
	})
	first, err := Start(runningPod(), spec, target, 0, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, first.Containers)
	assert.Equal(t, "t", first.Pod.Annotations[pub.RestartedAtAnnotationKey], "written with the first batch")
	s := stateJSON(t, first.Pod)
	assert.JSONEq(t, `{"app":{"imageID":"sha-app1","containerID":"cri://app-1"}}`, string(s["lastContainerStatuses"]))
	assert.JSONEq(t, `true`, string(s["updateEnvFromMetadata"]))
	assert.JSONEq(t, `{"log":{"annotations":{"kubectl.kubernetes.io/restartedAt":"t"}}}`, string(s["nextContainerRefMetadata"]))

	pod := gen.PodFrom(first.Pod, gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "sha-app2", ContainerID: "cri://app-2", Ready: true}))
	next, err := NextBatch(pod, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"log"}, next.Containers)
	s = stateJSON(t, next.Pod)
	assert.JSONEq(t, `{"app":{"imageID":"sha-app1","containerID":"cri://app-1"},"log":{"imageID":"sha-log1","containerID":"cri://log-1","restart":true}}`,
		string(s["lastContainerStatuses"]))

	st, err := ReadState(next.Pod)
	require.NoError(t, err)
	assert.False(t, kubeletRestarting(next.Pod, st), "the daemon restarts log: the gate is not released to the kubelet")
	done, waiting := containersDone(next.Pod, st)
	assert.False(t, done)
	assert.Equal(t, "container log has not been restarted yet", waiting)
	restartedLog := gen.PodFrom(next.Pod, gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "log", Image: "log:1", ImageID: "sha-log1", ContainerID: "cri://log-2", Ready: true}))
	done, _ = containersDone(restartedLog, st)
	assert.True(t, done, "a new container ID, same image: restarted")
}
