package inplace

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var t0 = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

var target = Target{Revision: "web-r2", RevisionLabelKey: "controller-revision-hash", RevisionLabelValue: "r2"}

// runningPod is a pod of two prioritised containers, app (first) and log (reads label zone),
// both running and ready.
func runningPod(mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{
		gen.SetPodNamespace("ns"),
		gen.SetPodResourceVersion("7"),
		gen.AddPodLabels(map[string]string{"controller-revision-hash": "r1", "zone": "a"}),
		gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKeyOld: "{}"}),
		gen.SetPodContainers(
			gen.Container("app", gen.SetContainerImage("app:1"), barrier(1), gen.SetContainerResources(res("1", ""), res("2", ""))),
			gen.Container("log", gen.SetContainerImage("log:1"), barrier(0), gen.AddContainerEnvFromField("ZONE", "metadata.labels['zone']")),
		),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:1", ImageID: "sha-app1", ContainerID: "cri://app-1", Ready: true}),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "log", Image: "log:1", ImageID: "sha-log1", ContainerID: "cri://log-1", Ready: true}),
	}
	return gen.Pod("web", append(base, mods...)...)
}

// twoBatchSpec changes app's image and resources, log's image and the label zone it reads, and
// a plain label.
func twoBatchSpec() *Spec {
	return specWith(func(s *Spec) {
		s.ContainerImages["app"] = "app:2"
		s.ContainerImages["log"] = "log:2"
		s.ContainerResources["app"] = corev1.ResourceRequirements{Requests: res("2", ""), Limits: res("3", "")}
		s.ContainerRefMetadata["log"] = metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}}
		s.Metadata = MetadataPatch{Labels: map[string]string{"tier": "front"}, RemovedLabels: []string{"zone-old"}}
	})
}

func stateJSON(t *testing.T, pod *corev1.Pod) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(pod.Annotations[pub.InPlaceUpdateStateKey]), &m))
	return m
}

func TestStartWritesTheFirstBatch(t *testing.T) {
	pod := runningPod()
	step, err := Start(pod, twoBatchSpec(), target, 0, t0)
	require.NoError(t, err)
	out := step.Pod

	assert.Equal(t, []string{"app"}, step.Containers)
	assert.False(t, step.Grace)
	assert.Equal(t, map[string]corev1.ResourceRequirements{"app": {Requests: res("2", ""), Limits: res("3", "")}}, step.Resize)
	assert.Equal(t, "app:2", out.Spec.Containers[0].Image)
	assert.Equal(t, "log:1", out.Spec.Containers[1].Image, "log is in the next batch")
	assert.Equal(t, res("1", ""), out.Spec.Containers[0].Resources.Requests, "resources change through the resize subresource only")
	assert.Equal(t, map[string]string{"controller-revision-hash": "r2", "zone": "a", "tier": "front"}, out.Labels,
		"the label log reads is held back for its batch")
	assert.NotContains(t, out.Annotations, pub.InPlaceUpdateStateKeyOld)
	assert.Equal(t, "app:1", pod.Spec.Containers[0].Image, "the pod given is not changed")

	// The state, field by field.
	s := stateJSON(t, out)
	assert.JSONEq(t, `"web-r2"`, string(s["revision"]))
	assert.JSONEq(t, `"2026-07-01T10:00:00Z"`, string(s["updateTimestamp"]))
	assert.JSONEq(t, `{"app":{"imageID":"sha-app1","containerID":"cri://app-1"}}`, string(s["lastContainerStatuses"]))
	assert.JSONEq(t, `true`, string(s["updateEnvFromMetadata"]))
	assert.JSONEq(t, `true`, string(s["updateResources"]))
	assert.JSONEq(t, `true`, string(s["updateImages"]))
	assert.JSONEq(t, `{"log":"log:2"}`, string(s["nextContainerImages"]))
	assert.JSONEq(t, `{"log":{"labels":{"zone":"b"}}}`, string(s["nextContainerRefMetadata"]))
	assert.NotContains(t, s, "nextContainerResources")
	assert.JSONEq(t, `{"containersRequiredReady":["app"]}`, string(s["preCheckBeforeNext"]))
	assert.JSONEq(t, `[{"timestamp":"2026-07-01T10:00:00Z","containers":["app"]}]`, string(s["containerBatchesRecord"]))
	assert.Len(t, s, 10)
}

func TestNextBatchWritesTheRest(t *testing.T) {
	first, err := Start(runningPod(), twoBatchSpec(), target, 0, t0)
	require.NoError(t, err)
	// app restarted with its new image and is ready.
	pod := gen.PodFrom(first.Pod, gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "sha-app2", ContainerID: "cri://app-2", Ready: true}))

	step, err := NextBatch(pod, t0.Add(time.Minute))
	require.NoError(t, err)
	out := step.Pod
	assert.Equal(t, []string{"log"}, step.Containers)
	assert.Empty(t, step.Resize)
	assert.Equal(t, "log:2", out.Spec.Containers[1].Image)
	assert.Equal(t, "b", out.Labels["zone"])

	s := stateJSON(t, out)
	assert.JSONEq(t, `"2026-07-01T10:00:00Z"`, string(s["updateTimestamp"]), "the update's start is kept")
	assert.JSONEq(t, `{"app":{"imageID":"sha-app1","containerID":"cri://app-1"},"log":{"imageID":"sha-log1","containerID":"cri://log-1"}}`,
		string(s["lastContainerStatuses"]))
	for _, k := range []string{"nextContainerImages", "nextContainerRefMetadata", "nextContainerResources", "preCheckBeforeNext"} {
		assert.NotContains(t, s, k)
	}
	assert.JSONEq(t, `[{"timestamp":"2026-07-01T10:00:00Z","containers":["app"]},{"timestamp":"2026-07-01T10:01:00Z","containers":["log"]}]`,
		string(s["containerBatchesRecord"]))

	_, err = NextBatch(out, t0)
	assert.EqualError(t, err, "pod ns/web has no batch of an in-place update left")
}

func TestStartMutatesInTheSameWrite(t *testing.T) {
	tg := target
	tg.Mutate = func(p *corev1.Pod) { p.Labels["lifecycle.apps.kruise.io/state"] = "Updating" }
	for _, grace := range []int32{0, 5} {
		step, err := Start(runningPod(), twoBatchSpec(), tg, grace, t0)
		require.NoError(t, err)
		assert.Equal(t, "Updating", step.Pod.Labels["lifecycle.apps.kruise.io/state"], "grace %d", grace)
	}
}

func TestStartWithGraceOnlyRecords(t *testing.T) {
	step, err := Start(runningPod(), twoBatchSpec(), target, 30, t0)
	require.NoError(t, err)
	out := step.Pod
	assert.True(t, step.Grace)
	assert.Empty(t, step.Containers)
	assert.Empty(t, step.Resize)
	assert.Equal(t, "app:1", out.Spec.Containers[0].Image)
	assert.Equal(t, map[string]string{"controller-revision-hash": "r2", "zone": "a"}, out.Labels, "only the revision label")
	s := stateJSON(t, out)
	assert.JSONEq(t, `{"revision":"web-r2","updateTimestamp":"2026-07-01T10:00:00Z","lastContainerStatuses":null,"updateEnvFromMetadata":true,"updateResources":true,"updateImages":true}`,
		out.Annotations[pub.InPlaceUpdateStateKey])
	assert.Len(t, s, 6)
	g, err := ReadGrace(out)
	require.NoError(t, err)
	assert.Equal(t, int32(30), g.GraceSeconds)

	// Once over, the grace record gives the same first batch as an update without grace.
	finished, err := FinishGrace(out, t0.Add(30*time.Second))
	require.NoError(t, err)
	assert.NotContains(t, finished.Pod.Annotations, pub.InPlaceUpdateGraceKey)
	assert.Equal(t, []string{"app"}, finished.Containers)
	assert.Equal(t, "app:2", finished.Pod.Spec.Containers[0].Image)
	assert.Equal(t, "front", finished.Pod.Labels["tier"])
	fs := stateJSON(t, finished.Pod)
	assert.JSONEq(t, `"2026-07-01T10:00:00Z"`, string(fs["updateTimestamp"]))
	assert.JSONEq(t, `{"log":"log:2"}`, string(fs["nextContainerImages"]))
}

func TestStartNativeSidecarImage(t *testing.T) {
	pod := runningPod(
		gen.AddPodInitContainer(gen.Container("proxy", gen.SetContainerImage("proxy:1"), gen.SetContainerRestartPolicy(corev1.ContainerRestartPolicyAlways))),
		gen.SetPodInitContainerStatus(corev1.ContainerStatus{Name: "proxy", ImageID: "sha-p1", ContainerID: "cri://proxy-1"}),
	)
	step, err := Start(pod, imagesOf("proxy"), target, 0, t0)
	require.NoError(t, err)
	assert.Equal(t, "proxy:2", step.Pod.Spec.InitContainers[0].Image)
	assert.JSONEq(t, `{"proxy":{"imageID":"sha-p1","containerID":"cri://proxy-1"}}`, string(stateJSON(t, step.Pod)["lastContainerStatuses"]))
}

func TestStartUnknownContainer(t *testing.T) {
	_, err := Start(runningPod(), imagesOf("ghost"), target, 0, t0)
	assert.EqualError(t, err, "pod ns/web has no container ghost to update")
}

func TestFinishGraceWithoutRecord(t *testing.T) {
	_, err := FinishGrace(runningPod(), t0)
	assert.EqualError(t, err, "pod ns/web has no in-place update grace record")
}
