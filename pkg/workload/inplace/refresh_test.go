package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// Pods at each point of the two-batch update of runningPod.
func startedPod(t *testing.T, grace int32) *corev1.Pod {
	t.Helper()
	step, err := Start(runningPod(gen.AddPodReadinessGate(pub.InPlaceUpdateReady)), twoBatchSpec(), target, grace, t0)
	require.NoError(t, err)
	return step.Pod
}

func appRestarted(ready bool) gen.PodModifier {
	return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "sha-app2", ContainerID: "cri://app-2", Ready: ready,
		Resources: &corev1.ResourceRequirements{Requests: res("1", ""), Limits: res("2", "")}})
}

func logRestarted() gen.PodModifier {
	return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "log", ImageID: "sha-log2", ContainerID: "cri://log-2", Ready: true,
		Resources: &corev1.ResourceRequirements{}})
}

func inPlaceReady(s corev1.ConditionStatus) gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: s})
}

// imagesLastBatch is runningPod, with the gate, updated in place to new images of app and log
// (two batches), app restarted and ready, log's batch written.
func imagesLastBatch(t *testing.T) *corev1.Pod {
	t.Helper()
	step, err := Start(runningPod(gen.AddPodReadinessGate(pub.InPlaceUpdateReady)), imagesOf("app", "log"), target, 0, t0)
	require.NoError(t, err)
	step, err = NextBatch(gen.PodFrom(step.Pod, appRestarted(true)), t0)
	require.NoError(t, err)
	return step.Pod
}

// logStopped: log's old container, which the kubelet is replacing, fails its readiness.
func logStopped() gen.PodModifier {
	return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "log", Image: "log:1", ImageID: "sha-log1", ContainerID: "cri://log-1"})
}

func releasedGate() gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, Reason: pub.InPlaceUpdateRestartingReason})
}

func TestDecide(t *testing.T) {
	lastBatch := func(t *testing.T) *corev1.Pod {
		step, err := NextBatch(gen.PodFrom(startedPod(t, 0), appRestarted(true)), t0)
		require.NoError(t, err)
		return step.Pod
	}
	cases := []struct {
		name string
		pod  func(t *testing.T) *corev1.Pod
		now  time.Time
		want Decision
	}{{
		name: "grace period running",
		pod:  func(t *testing.T) *corev1.Pod { return startedPod(t, 30) },
		now:  t0.Add(10*time.Second + 300*time.Millisecond),
		want: Decision{Waiting: "grace period", RequeueAfter: 20 * time.Second},
	}, {
		name: "grace period over",
		pod:  func(t *testing.T) *corev1.Pod { return startedPod(t, 30) },
		now:  t0.Add(30 * time.Second),
		want: Decision{Action: ActionFinishGrace},
	}, {
		name: "first batch not restarted",
		pod:  func(t *testing.T) *corev1.Pod { return startedPod(t, 0) },
		want: Decision{Waiting: "container app has not been restarted yet"},
	}, {
		name: "first batch restarted but not ready",
		pod:  func(t *testing.T) *corev1.Pod { return gen.PodFrom(startedPod(t, 0), appRestarted(false)) },
		want: Decision{Waiting: "container app to be ready before the next batch"},
	}, {
		name: "first batch ready",
		pod:  func(t *testing.T) *corev1.Pod { return gen.PodFrom(startedPod(t, 0), appRestarted(true)) },
		want: Decision{Action: ActionNextBatch},
	}, {
		name: "last batch not restarted",
		pod:  lastBatch,
		want: Decision{Waiting: "container log has not been restarted yet"},
	}, {
		name: "all done, condition False",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(lastBatch(t), logRestarted(), inPlaceReady(corev1.ConditionFalse))
		},
		want: Decision{Action: ActionMarkReady},
	}, {
		name: "all done, condition True",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(lastBatch(t), logRestarted(), inPlaceReady(corev1.ConditionTrue))
		},
		want: Decision{},
	}, {
		name: "images only: last batch synced by the kubelet, old container stopped",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), logStopped(), gen.SetPodGeneration(3, 3), inPlaceReady(corev1.ConditionFalse))
		},
		want: Decision{Action: ActionReleaseGate},
	}, {
		name: "images only: last batch not synced by the kubelet yet",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), logStopped(), gen.SetPodGeneration(3, 2), inPlaceReady(corev1.ConditionFalse))
		},
		want: Decision{Waiting: "container log has not been restarted yet"},
	}, {
		name: "images only: last batch synced, old container still reported ready",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), gen.SetPodGeneration(3, 3), inPlaceReady(corev1.ConditionFalse))
		},
		want: Decision{Action: ActionReleaseGate},
	}, {
		name: "images only: gate released, pod Ready on the old container",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), gen.SetPodGeneration(3, 3), releasedGate(),
				gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
		},
		want: Decision{Action: ActionHoldGate},
	}, {
		name: "gate False, Ready written back on the old container before the kubelet's sync",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), gen.SetPodGeneration(3, 2), inPlaceReady(corev1.ConditionFalse),
				gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
		},
		want: Decision{Action: ActionRestateNotReady},
	}, {
		name: "gate False, Ready written back on the old container, synced: restated before released",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), gen.SetPodGeneration(3, 3), inPlaceReady(corev1.ConditionFalse),
				gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
		},
		want: Decision{Action: ActionRestateNotReady},
	}, {
		name: "gate False, Ready on the new container",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), logRestarted(), gen.SetPodGeneration(3, 3), inPlaceReady(corev1.ConditionFalse),
				gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
		},
		want: Decision{Action: ActionMarkReady},
	}, {
		name: "images only: gate held after a release is not released again",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), logStopped(), gen.SetPodGeneration(3, 3),
				gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: ReasonOldContainerReady}))
		},
		want: Decision{Waiting: "container log has not been restarted yet"},
	}, {
		name: "images only: gate released, new container not running yet",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), logStopped(), gen.SetPodGeneration(3, 3), releasedGate())
		},
		want: Decision{Waiting: "container log has not been restarted yet"},
	}, {
		name: "images only: gate released, all done",
		pod: func(t *testing.T) *corev1.Pod {
			return gen.PodFrom(imagesLastBatch(t), logRestarted(), gen.SetPodGeneration(3, 3), releasedGate())
		},
		want: Decision{Action: ActionMarkReady},
	}, {
		name: "images only: first batch synced, old container stopped: the gate stays",
		pod: func(t *testing.T) *corev1.Pod {
			step, err := Start(runningPod(gen.AddPodReadinessGate(pub.InPlaceUpdateReady)), imagesOf("app", "log"), target, 0, t0)
			require.NoError(t, err)
			return gen.PodFrom(step.Pod, gen.SetPodGeneration(2, 2), inPlaceReady(corev1.ConditionFalse),
				gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ImageID: "sha-app1", ContainerID: "cri://app-1"}))
		},
		want: Decision{Waiting: "container app has not been restarted yet"},
	}, {
		name: "a new pod with the gate",
		pod: func(t *testing.T) *corev1.Pod {
			return runningPod(gen.AddPodReadinessGate(pub.InPlaceUpdateReady))
		},
		want: Decision{Action: ActionMarkReady},
	}, {
		name: "a pod without the gate",
		pod:  func(t *testing.T) *corev1.Pod { return runningPod() },
		want: Decision{},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			got, err := Decide(tc.pod(t), now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDecideMalformed(t *testing.T) {
	_, err := Decide(runningPod(gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: "not json"})), t0)
	assert.ErrorContains(t, err, "is not an in-place update state")

	graceOnly := gen.Pod("web", gen.SetPodNamespace("ns"), gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateGraceKey: `{"revision":"r2"}`}))
	_, err = Decide(graceOnly, t0)
	assert.EqualError(t, err, "pod ns/web: annotation apps.kruise.io/inplace-update-grace is present without an in-place update state")
}

func TestUpdateDone(t *testing.T) {
	done, _, err := UpdateDone(runningPod())
	require.NoError(t, err)
	assert.True(t, done, "never updated")

	done, waiting, err := UpdateDone(startedPod(t, 30))
	require.NoError(t, err)
	assert.False(t, done)
	assert.Equal(t, "grace period", waiting)

	done, waiting, err = UpdateDone(gen.PodFrom(startedPod(t, 0), appRestarted(true)))
	require.NoError(t, err)
	assert.False(t, done)
	assert.Equal(t, "later batches", waiting)

	step, err := NextBatch(gen.PodFrom(startedPod(t, 0), appRestarted(true)), t0)
	require.NoError(t, err)
	done, _, err = UpdateDone(gen.PodFrom(step.Pod, logRestarted()))
	require.NoError(t, err)
	assert.True(t, done)
}
