package sidecarterminator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var podsGR = schema.GroupResource{Resource: "pods"}

// counter reads the terminations metric for the mechanism.
func counter(t *testing.T, f *fixture, mechanism string) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, f.ctrl.terminations.WithLabelValues(mechanism).Write(&m))
	return m.GetCounter().GetValue()
}

// failPatch makes patches of the pod (subresource "" or "status") fail with err.
func failPatch(f *fixture, subresource string, err error) {
	f.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != subresource {
			return false, nil, nil
		}
		return true, nil, err
	})
}

func forbidden() error {
	return apierrors.NewForbidden(podsGR, podName, errors.New("denied by policy"))
}

// finishedPod is a Never pod on a real node whose main exited with code
// and whose sidecar s still runs.
func finishedPod(code int32, mods ...gen.PodModifier) *corev1.Pod {
	return gen.PodFrom(newPod(corev1.RestartPolicyNever, withMain("m", exited(code)), withSidecar("s", running())), mods...)
}

func TestSyncRecordsPhase(t *testing.T) {
	tests := []struct {
		name       string
		pod        *corev1.Pod
		nodes      []*corev1.Node
		wantPhase  corev1.PodPhase
		wantReason string
		wantEvent  string
	}{
		{
			name: "Never, main succeeded", pod: finishedPod(0), nodes: []*corev1.Node{gen.Node(nodeName)},
			wantPhase: corev1.PodSucceeded, wantReason: reasonMainsSucceeded,
			wantEvent: "Normal TerminatingSidecars Recorded phase Succeeded: Main containers finished (m exited 0); stopping sidecars s",
		},
		{
			name: "Never, main failed", pod: finishedPod(2), nodes: []*corev1.Node{gen.Node(nodeName)},
			wantPhase: corev1.PodFailed, wantReason: reasonMainsFailed,
			wantEvent: "Normal TerminatingSidecars Recorded phase Failed: Main containers finished (m exited 2); stopping sidecars s",
		},
		{
			name: "OnFailure, two sidecars, node object gone",
			pod: newPod(corev1.RestartPolicyOnFailure, withSidecar("a", running()), withMain("m", exited(0)),
				withSidecarImage("b", "busybox", running())),
			wantPhase: corev1.PodSucceeded, wantReason: reasonMainsSucceeded,
			wantEvent: "Normal TerminatingSidecars Recorded phase Succeeded: Main containers finished (m exited 0); stopping sidecars a, b",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{pods: []*corev1.Pod{tc.pod}, nodes: tc.nodes})
			assert.Zero(t, f.mustSync(t))

			patches := f.patches()
			require.Len(t, patches, 2)
			require.Len(t, f.writes(), 2, "nothing but the two patches")

			st := patches[0]
			assert.Equal(t, "status", st.GetSubresource())
			assert.Equal(t, podName, st.GetName())
			assert.Equal(t, testNS, st.GetNamespace())
			body := decodePatch(t, st)
			assert.Equal(t, podUID, body.Metadata.UID, "the uid guards against a replaced pod")
			require.NotNil(t, body.Status)
			assert.Equal(t, tc.wantPhase, body.Status.Phase)
			require.Len(t, body.Status.Conditions, 1)
			cond := body.Status.Conditions[0]
			assert.Equal(t, ConditionSidecarTerminated, cond.Type)
			assert.Equal(t, corev1.ConditionTrue, cond.Status)
			assert.Equal(t, tc.wantReason, cond.Reason)
			assert.True(t, cond.LastTransitionTime.Time.Equal(now), "%v", cond.LastTransitionTime)
			assert.Nil(t, body.Spec)

			meta := patches[1]
			assert.Equal(t, "", meta.GetSubresource())
			assert.Equal(t, podName, meta.GetName())
			body = decodePatch(t, meta)
			assert.Equal(t, podUID, body.Metadata.UID)
			assert.Equal(t, map[string]string{AnnotationTerminatedAt: now.Format(time.RFC3339Nano)}, body.Metadata.Annotations)
			assert.Nil(t, body.Status)
			assert.Nil(t, body.Spec)

			// What the API server holds now.
			live := f.getPod(t)
			assert.Equal(t, tc.wantPhase, live.Status.Phase)
			assert.True(t, recorded(live))
			assert.Equal(t, now.Format(time.RFC3339Nano), live.Annotations[AnnotationTerminatedAt])
			assert.Len(t, live.Status.ContainerStatuses, len(tc.pod.Status.ContainerStatuses), "container statuses kept")

			assert.Equal(t, []string{tc.wantEvent}, f.events())
			assert.Empty(t, f.listCRRs(t))
			assert.Equal(t, 1.0, counter(t, f, string(MechanismPhase)))
			assert.Zero(t, counter(t, f, string(MechanismCRR)))
		})
	}
}

// A second sync while the cache still shows the pod from before our writes
// (the informer lags) writes nothing; once the cache has caught up, a phase
// the kubelet wrote back to Running is recorded again; a recorded pod is
// only followed up.
func TestSyncRecordsPhaseIdempotence(t *testing.T) {
	pod := finishedPod(0)
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	f.mustSync(t)
	require.Len(t, f.patches(), 2)
	f.mustSync(t)
	assert.Len(t, f.patches(), 2, "a stale cache is not decided on again")
	assert.Len(t, f.events(), 1)

	// The kubelet overwrote the phase: our condition and annotation stay.
	live := f.cacheLive(t)
	live.Status.Phase = corev1.PodRunning
	require.NoError(t, f.podIndexer.Update(live))
	f.clock.Step(time.Second)
	f.mustSync(t)
	patches := f.patches()
	require.Len(t, patches, 4)
	assert.Equal(t, []string{"status", "", "status", ""}, []string{
		patches[0].GetSubresource(), patches[1].GetSubresource(), patches[2].GetSubresource(), patches[3].GetSubresource(),
	})
	assert.Equal(t, corev1.PodSucceeded, f.getPod(t).Status.Phase)
	assert.Len(t, f.events(), 1)

	// Caught up: the pod is recorded, only followed up.
	f.cacheLive(t)
	after := f.mustSync(t)
	assert.Positive(t, after, "the follow-up looks again later")
	assert.Len(t, f.patches(), 4)

	done := finishedPod(0, gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now))
	f = newFixture(t, objects{pods: []*corev1.Pod{done}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	after = f.mustSync(t)
	assert.Positive(t, after, "the follow-up looks again later")
	assert.Empty(t, f.writes())
	assert.Empty(t, f.events())
}

func TestSyncNoWrite(t *testing.T) {
	never := corev1.RestartPolicyNever
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{name: "main running", pod: newPod(never, withMain("m", running()), withSidecar("s", running()))},
		{name: "OnFailure main failed", pod: newPod(corev1.RestartPolicyOnFailure, withMain("m", exited(1)), withSidecar("s", running()))},
		{name: "Always", pod: newPod(corev1.RestartPolicyAlways, withMain("m", exited(0)), withSidecar("s", running()))},
		{name: "deleting", pod: finishedPod(0, deleting)},
		{name: "sidecars all done", pod: newPod(never, withMain("m", exited(0)), withSidecar("s", exited(143)))},
		{name: "finished without us", pod: finishedPod(0, gen.SetPodPhase(corev1.PodSucceeded))},
		{name: "pending", pod: finishedPod(0, gen.SetPodPhase(corev1.PodPending))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{pods: []*corev1.Pod{tc.pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
			assert.Zero(t, f.mustSync(t))
			assert.Empty(t, f.writes())
			assert.Empty(t, f.events())
		})
	}
}

func TestSyncPodMissing(t *testing.T) {
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	assert.Zero(t, f.mustSync(t))
	assert.Empty(t, f.kube.Actions(), "the cache decides: not even a read")
	assert.Empty(t, f.kruise.Actions())
	assert.Empty(t, f.events())

	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, "a/b/c")
	assert.NoError(t, err, "a malformed key is dropped")
	assert.Zero(t, after)
}

func TestSyncStatusPatchRefused(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, podName,
		field.ErrorList{field.Forbidden(field.NewPath("status", "phase"), "not allowed")})
	for name, refusal := range map[string]error{"forbidden": forbidden(), "invalid": invalid} {
		t.Run(name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyNever, withMain("m", exited(0)), withSidecar("s", running()), withSidecar("w", waiting()))
			f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
			failPatch(f, "status", refusal)
			assert.Zero(t, f.mustSync(t))

			patches := f.patches()
			require.Len(t, patches, 1, "no annotation after a refused status write")
			assert.Equal(t, "status", patches[0].GetSubresource())

			crrs := f.listCRRs(t)
			require.Len(t, crrs, 1)
			assert.Equal(t, crrName, crrs[0].Name)
			assert.Equal(t, []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "s"}}, crrs[0].Spec.Containers)

			events := f.events()
			require.Len(t, events, 2)
			assert.Contains(t, events[0], "Warning "+ReasonPhaseNotRecorded+" Could not record phase Succeeded")
			assert.Contains(t, events[1], "Normal "+ReasonTerminatingSidecars+" ")
			assert.Contains(t, events[1], crrName)
			assert.Equal(t, corev1.PodRunning, f.getPod(t).Status.Phase)
			assert.Zero(t, counter(t, f, string(MechanismPhase)))
			assert.Equal(t, 1.0, counter(t, f, string(MechanismCRR)))

			// Again: the CRR exists, the warning was said.
			assert.Zero(t, f.mustSync(t))
			assert.Len(t, f.listCRRs(t), 1)
			assert.Empty(t, f.events())
		})
	}
}

// A refusal because the pod was replaced (or deleted) under its name is
// left to the new pod's own sync.
func TestSyncStatusPatchRefusedPodReplaced(t *testing.T) {
	replacement := finishedPod(0)
	replacement.UID = "pod-uid-2"
	for name, o := range map[string]objects{
		"replaced": {cacheOnly: []*corev1.Pod{finishedPod(0)}, apiOnly: []*corev1.Pod{replacement}},
		"deleted":  {cacheOnly: []*corev1.Pod{finishedPod(0)}},
	} {
		t.Run(name, func(t *testing.T) {
			o.nodes = []*corev1.Node{gen.Node(nodeName)}
			f := newFixture(t, o)
			failPatch(f, "status", forbidden())
			assert.Zero(t, f.mustSync(t))
			assert.Empty(t, f.kruise.Actions())
			assert.Empty(t, f.listCRRs(t))
			assert.Empty(t, f.events())
		})
	}
}

func TestSyncStatusPatchFails(t *testing.T) {
	f := newFixture(t, objects{pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	failPatch(f, "status", apierrors.NewInternalError(errors.New("etcd is down")))
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsInternalError(err), "%v", err)
	assert.Len(t, f.patches(), 1)
	assert.Empty(t, f.kruise.Actions(), "no CRR for a transient error")
	assert.Empty(t, f.events())

	// A conflict (the uid no longer matches) is returned as a conflict.
	f = newFixture(t, objects{pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	failPatch(f, "status", apierrors.NewConflict(podsGR, podName, errors.New("uid mismatch")))
	_, err = f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, f.kruise.Actions())
}

// The phase is written but the annotation is not: an error to retry, and
// no event claiming the sidecars are being stopped.
func TestSyncAnnotationPatchFails(t *testing.T) {
	f := newFixture(t, objects{pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	failPatch(f, "", apierrors.NewServiceUnavailable("try later"))
	_, err := f.sync(t)
	require.Error(t, err)
	assert.Len(t, f.patches(), 2)
	assert.Equal(t, corev1.PodSucceeded, f.getPod(t).Status.Phase)
	assert.Empty(t, f.events())
	assert.Empty(t, f.kruise.Actions())
}

// When only the metadata patch is refused (RBAC grants pods/status but not
// pods patch), the phase has been recorded: no CRR fallback, no claim that
// the phase could not be recorded, an error to retry and one warning.
func TestSyncAnnotationPatchForbidden(t *testing.T) {
	f := newFixture(t, objects{pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	failPatch(f, "", forbidden())
	_, err := f.sync(t)
	require.Error(t, err)
	require.Equal(t, corev1.PodSucceeded, f.getPod(t).Status.Phase, "the status patch went through")
	assert.Empty(t, f.listCRRs(t))
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonSidecarNotTerminated)
	assert.Contains(t, events[0], AnnotationTerminatedAt)
	assert.NotContains(t, events[0], ReasonPhaseNotRecorded)
}

func TestSyncCRRMechanism(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever,
		withSidecar("s1", running()),
		withMain("m", exited(1)),
		withSidecar("s2", waiting()),
		withSidecar("s3", exited(0)),
		withSidecarImage("s4", "busybox", running()),
		withSidecar("s5", noStatus()))
	f := newFixture(t, objects{mechanism: MechanismCRR, pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	assert.Zero(t, f.mustSync(t))

	assert.Empty(t, f.patches(), "the crr mechanism leaves the pod to the kubelet")
	crrs := f.listCRRs(t)
	require.Len(t, crrs, 1)
	crr := crrs[0]
	assert.Equal(t, "sidecar-termination-pod-uid-1", crr.Name)
	assert.Equal(t, testNS, crr.Namespace)
	assert.Equal(t, map[string]string{LabelSidecarTermination: "true"}, crr.Labels)
	require.Len(t, crr.OwnerReferences, 1)
	ref := crr.OwnerReferences[0]
	assert.Equal(t, "v1", ref.APIVersion)
	assert.Equal(t, "Pod", ref.Kind)
	assert.Equal(t, podName, ref.Name)
	assert.Equal(t, podUID, ref.UID)
	assert.Equal(t, podName, crr.Spec.PodName)
	assert.Equal(t, []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "s1"}, {Name: "s4"}}, crr.Spec.Containers,
		"only unterminated sidecars with a container to stop")
	require.NotNil(t, crr.Spec.Strategy)
	assert.True(t, crr.Spec.Strategy.ForceRecreate)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore, crr.Spec.Strategy.FailurePolicy)

	assert.Equal(t, []string{"Normal TerminatingSidecars Main containers finished (m exited 1); created ContainerRecreateRequest " +
		crrName + " to stop sidecars s1, s2, s4, s5"}, f.events())
	assert.Equal(t, 1.0, counter(t, f, string(MechanismCRR)))
	assert.Zero(t, counter(t, f, string(MechanismPhase)))

	// Second sync: the create meets AlreadyExists, which is fine.
	f.kruise.ClearActions()
	assert.Zero(t, f.mustSync(t))
	var creates int
	for _, a := range f.kruise.Actions() {
		if a.GetVerb() == "create" {
			creates++
		}
	}
	assert.Equal(t, 1, creates, "created again, refused")
	assert.Len(t, f.listCRRs(t), 1)
	assert.Empty(t, f.events())
	assert.Equal(t, 1.0, counter(t, f, string(MechanismCRR)))
}

func TestSyncCRRCreateFails(t *testing.T) {
	f := newFixture(t, objects{mechanism: MechanismCRR, pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	f.kruise.PrependReactor("create", "containerrecreaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("webhook down")
	})
	_, err := f.sync(t)
	require.Error(t, err)
	assert.Contains(t, err.Error(), crrName)
	assert.Empty(t, f.events())
	assert.Zero(t, counter(t, f, string(MechanismCRR)))
}

func TestSyncCRRNoStartedSidecar(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, withMain("m", exited(0)), withSidecar("s", waiting()))
	f := newFixture(t, objects{mechanism: MechanismCRR, pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	assert.Zero(t, f.mustSync(t))
	assert.Zero(t, f.mustSync(t))
	assert.Empty(t, f.writes())
	events := f.events()
	require.Len(t, events, 1, "warned once")
	assert.Contains(t, events[0], "Warning "+ReasonSidecarNotTerminated+" Sidecars s have not started")
}

func TestSyncVirtualKubelet(t *testing.T) {
	for _, mech := range []Mechanism{MechanismPhase, MechanismCRR} {
		t.Run(string(mech), func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyNever, gen.SetPodNodeName(vkNode),
				withMain("m", exited(0)),
				withSidecarImage("s1", "127.0.0.1:5000/public/exit:1", running()),
				withSidecar("s2", running()),
				withSidecarImage("s3", "UPPER CASE::x", running()),
				withSidecarImage("s4", "busybox", running()))
			f := newFixture(t, objects{mechanism: mech, pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(vkNode, virtualKubelet), gen.Node(nodeName)}})
			assert.Zero(t, f.mustSync(t))

			patches := f.patches()
			require.Len(t, patches, 1)
			require.Len(t, f.writes(), 1, "no status patch, no CRR")
			assert.Equal(t, "", patches[0].GetSubresource())
			body := decodePatch(t, patches[0])
			assert.Equal(t, podUID, body.Metadata.UID)
			assert.Nil(t, body.Status)
			require.NotNil(t, body.Spec)
			assert.Equal(t, []map[string]string{
				{"name": "s1", "image": "127.0.0.1:5000/public/exit:1"},
				{"name": "s4", "image": "busybox"},
			}, body.Spec.Containers)

			live := f.getPod(t)
			images := map[string]string{}
			for _, c := range live.Spec.Containers {
				images[c.Name] = c.Image
			}
			assert.Equal(t, map[string]string{
				"m": "m:v1", "s1": "127.0.0.1:5000/public/exit:1", "s2": "s2:v1", "s3": "s3:v1", "s4": "busybox",
			}, images)
			assert.Equal(t, corev1.PodRunning, live.Status.Phase)

			var warnings, replaced []string
			for _, e := range f.events() {
				switch {
				case strings.HasPrefix(e, "Warning "+ReasonSidecarNotTerminated):
					warnings = append(warnings, e)
				case strings.HasPrefix(e, "Normal "+ReasonSidecarImageReplaced):
					replaced = append(replaced, e)
				case strings.HasPrefix(e, "Warning "+ReasonInvalidSidecarEnv):
				default:
					t.Errorf("unexpected event %q", e)
				}
			}
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0], "sidecars s2, s3 cannot be stopped")
			assert.Contains(t, warnings[0], vkNode)
			assert.Equal(t, []string{"Normal SidecarImageReplaced Main containers finished (m exited 0); replaced sidecar images: " +
				"s1=127.0.0.1:5000/public/exit:1, s4=busybox"}, replaced)
			assert.Equal(t, 1.0, counter(t, f, mechanismImage))
		})
	}
}

// Images already swapped (the cache caught up, the sidecar restarts): no
// second patch.
func TestSyncVirtualKubeletAlreadyReplaced(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, gen.SetPodNodeName(vkNode), withMain("m", exited(0)),
		withSidecarImage("s", "busybox", running()))
	pod.Spec.Containers[1].Image = "busybox"
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(vkNode, virtualKubelet)}})
	assert.Zero(t, f.mustSync(t))
	assert.Empty(t, f.writes())
	assert.Empty(t, f.events())
}

func TestSyncVirtualKubeletSidecarWithoutImage(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, gen.SetPodNodeName(vkNode), withMain("m", exited(0)), withSidecar("s", running()))
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(vkNode, virtualKubelet)}})
	assert.Zero(t, f.mustSync(t))
	assert.Zero(t, f.mustSync(t))
	assert.Empty(t, f.writes(), "nothing can be done")
	events := f.events()
	require.Len(t, events, 1, "warned once")
	assert.Contains(t, events[0], "Warning "+ReasonSidecarNotTerminated+" Node vk-node is a virtual-kubelet node")
	assert.Contains(t, events[0], EnvTerminateSidecarWithImage)
}

func TestSyncInvalidEnv(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, withMain("m", running()),
		withContainer("x", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "yes"}}, running()),
		withSidecar("s", running()))
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	f.mustSync(t)
	f.mustSync(t)
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonInvalidSidecarEnv+` container "x"`)
	assert.Contains(t, events[0], `"yes"`)
	assert.Empty(t, f.writes(), "x is a main that still runs")

	// Forgotten with the pod: a pod of the same name is warned about again.
	f.ctrl.podDeleted(cache.DeletedFinalStateUnknown{Key: podKey, Obj: pod})
	f.mustSync(t)
	assert.Len(t, f.events(), 1)

	// A plain pod (not a tombstone) is forgotten too.
	f.ctrl.podDeleted(pod)
	f.mustSync(t)
	assert.Len(t, f.events(), 1)
	f.mustSync(t)
	assert.Empty(t, f.events(), "remembered again")
}

func TestSyncInvalidEnvNotReportedOnFinishedPod(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, withMain("m", exited(0)),
		withContainer("x", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "1"}}, exited(0)),
		gen.SetPodPhase(corev1.PodSucceeded))
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}})
	f.mustSync(t)
	assert.Empty(t, f.events())
}

func TestSyncOnlySidecars(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, withSidecar("a", running()), withSidecar("b", running()))
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
	f.mustSync(t)
	f.mustSync(t)
	assert.Empty(t, f.writes())
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonInvalidSidecarEnv+" every container is marked as a sidecar")
}

func TestFollowUpKilled(t *testing.T) {
	tests := []struct {
		name      string
		code      int32
		finished  time.Time
		wantEvent bool
	}{
		{name: "killed recently", code: 137, finished: now.Add(-10 * time.Second), wantEvent: true},
		{name: "killed just within the window", code: 137, finished: now.Add(-recentExit), wantEvent: true},
		{name: "killed long ago", code: 137, finished: now.Add(-recentExit - time.Second)},
		{name: "exited on SIGTERM", code: 143, finished: now.Add(-10 * time.Second)},
		{name: "exited 0", code: 0, finished: now.Add(-10 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyNever, withMain("m", exited(1)),
				withSidecar("s", exitedAt(tc.code, tc.finished)), withSidecar("ok", exited(0)),
				gen.SetPodPhase(corev1.PodFailed), withRecorded(now.Add(-time.Minute)))
			f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
			assert.Zero(t, f.mustSync(t))
			assert.Zero(t, f.mustSync(t))
			assert.Empty(t, f.writes())
			events := f.events()
			if !tc.wantEvent {
				assert.Empty(t, events)
				return
			}
			require.Len(t, events, 1, "reported once")
			assert.Equal(t, "Warning SidecarKilled Sidecar s did not exit on SIGTERM and was killed at the end of the pod's grace period "+
				"(exit code 137); the pod's phase stays Failed as its main containers decided", events[0])
		})
	}
}

func TestFollowUpStillRunning(t *testing.T) {
	t.Run("grace period from the spec", func(t *testing.T) {
		pod := finishedPod(0, withSidecar("done", exited(0)), gen.SetPodTerminationGracePeriodSeconds(10), gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now))
		f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		assert.Equal(t, 40*time.Second, f.mustSync(t), "grace 10s + 30s")
		f.clock.Step(39 * time.Second)
		assert.Equal(t, time.Second, f.mustSync(t))
		f.clock.Step(500 * time.Millisecond)
		assert.Equal(t, time.Second, f.mustSync(t), "never less than a second")
		assert.Empty(t, f.events())

		f.clock.Step(500 * time.Millisecond)
		assert.Zero(t, f.mustSync(t))
		assert.Equal(t, []string{"Warning SidecarStillRunning Sidecars s are still running more than 40s after the pod's phase was recorded " +
			"(grace period 10s); the kubelet on node-a has not stopped them"}, f.events())
		assert.Zero(t, f.mustSync(t))
		assert.Empty(t, f.events(), "the same message is not repeated")
		assert.Empty(t, f.writes())
	})
	t.Run("default grace period", func(t *testing.T) {
		pod := finishedPod(1, gen.SetPodPhase(corev1.PodFailed), withRecorded(now.Add(-10*time.Second)))
		f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		assert.Equal(t, 50*time.Second, f.mustSync(t), "30s + 30s, 10s of them gone")
		f.clock.Step(50 * time.Second)
		assert.Zero(t, f.mustSync(t))
		events := f.events()
		require.Len(t, events, 1)
		assert.Contains(t, events[0], "Warning SidecarStillRunning Sidecars s are still running more than 1m0s after")
	})
	// report() promises one warning per pod however often it is synced; the
	// pod is synced again on any update of it.
	t.Run("a later sync does not warn again", func(t *testing.T) {
		pod := finishedPod(0, gen.SetPodTerminationGracePeriodSeconds(0), gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now))
		f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		f.clock.Step(followUpSlack)
		assert.Zero(t, f.mustSync(t))
		require.Len(t, f.events(), 1)
		f.clock.Step(5 * time.Second)
		assert.Zero(t, f.mustSync(t))
		assert.Empty(t, f.events(), "SidecarStillRunning is reported once per pod")
	})
	t.Run("long past the deadline: not reported", func(t *testing.T) {
		pod := finishedPod(0, gen.SetPodTerminationGracePeriodSeconds(0), gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now.Add(-followUpSlack-recentExit)))
		f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		assert.Zero(t, f.mustSync(t))
		assert.Empty(t, f.events())
	})
	t.Run("a killed sidecar waits for the others", func(t *testing.T) {
		pod := finishedPod(0, withSidecar("k", exitedAt(137, now)), gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now))
		f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		assert.Equal(t, time.Minute, f.mustSync(t))
		assert.Empty(t, f.events())
	})
}

func TestEnqueuePod(t *testing.T) {
	f := newFixture(t, objects{})
	q := f.ctrl.queue
	f.ctrl.enqueuePod(newPod(corev1.RestartPolicyAlways, withMain("m", running()), withSidecar("s", running())))
	f.ctrl.enqueuePod(newPod(corev1.RestartPolicyNever, withMain("m", running()), withMain("n", running())))
	f.ctrl.enqueuePod(cache.DeletedFinalStateUnknown{Key: podKey, Obj: finishedPod(0)})
	f.ctrl.enqueuePod("not a pod")
	assert.Zero(t, q.Len(), "Always, unmarked and non-pods are not queued")

	f.ctrl.enqueuePod(finishedPod(0))
	require.Equal(t, 1, q.Len())
	key, _ := q.Get()
	assert.Equal(t, podKey, key)
	q.Done(key)

	onFailure := newPod(corev1.RestartPolicyOnFailure, withMain("m", running()),
		withContainer("x", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "false"}}, running()))
	onFailure.Name = "other"
	f.ctrl.enqueuePod(onFailure)
	require.Equal(t, 1, q.Len(), "any marking is worth a look")
	key, _ = q.Get()
	assert.Equal(t, testNS+"/other", key)
	q.Done(key)
}

func TestProcessNextWorkItem(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)

	t.Run("queued pod is synced", func(t *testing.T) {
		f := newFixture(t, objects{pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		f.ctrl.enqueuePod(finishedPod(0))
		require.True(t, f.ctrl.processNextWorkItem(ctx))
		assert.Len(t, f.patches(), 2)
		assert.Zero(t, f.ctrl.queue.Len())
		assert.Zero(t, f.ctrl.queue.NumRequeues(podKey))
	})
	t.Run("error is retried", func(t *testing.T) {
		f := newFixture(t, objects{pods: []*corev1.Pod{finishedPod(0)}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		failPatch(f, "status", apierrors.NewInternalError(errors.New("boom")))
		f.ctrl.enqueuePod(finishedPod(0))
		require.True(t, f.ctrl.processNextWorkItem(ctx))
		assert.Equal(t, 1, f.ctrl.queue.NumRequeues(podKey))
	})
	t.Run("follow-up comes back after its delay", func(t *testing.T) {
		pod := finishedPod(0, gen.SetPodTerminationGracePeriodSeconds(0), gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now))
		f := newFixture(t, objects{pods: []*corev1.Pod{pod}, nodes: []*corev1.Node{gen.Node(nodeName)}})
		f.ctrl.enqueuePod(pod)
		require.True(t, f.ctrl.processNextWorkItem(ctx))
		assert.Zero(t, f.ctrl.queue.Len(), "not at once")
		f.clock.Step(followUpSlack)
		require.Eventually(t, func() bool { return f.ctrl.queue.Len() == 1 }, 5*time.Second, 5*time.Millisecond)
		require.True(t, f.ctrl.processNextWorkItem(ctx))
		events := f.events()
		require.Len(t, events, 1)
		assert.Contains(t, events[0], ReasonSidecarStillRunning)
	})
	t.Run("shut down", func(t *testing.T) {
		f := newFixture(t, objects{})
		f.ctrl.queue.ShutDown()
		assert.False(t, f.ctrl.processNextWorkItem(ctx))
	})
}

func TestNew(t *testing.T) {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	cfg := Config{
		Config: ctrlbase.Config{Client: kube, KruiseClient: kruisefake.NewSimpleClientset()},
		Pods:   factory.Core().V1().Pods(),
		Nodes:  factory.Core().V1().Nodes(),
	}

	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	assert.Equal(t, MechanismPhase, c.mechanism, "default")
	assert.Equal(t, Name, c.Name())

	bad := cfg
	bad.Mechanism = "delete"
	_, err = New(bad)
	assert.ErrorContains(t, err, "unknown sidecar termination mechanism")

	for name, mut := range map[string]func(*Config){
		"Client":       func(c *Config) { c.Client = nil },
		"KruiseClient": func(c *Config) { c.KruiseClient = nil },
		"Pods":         func(c *Config) { c.Pods = nil },
		"Nodes":        func(c *Config) { c.Nodes = nil },
	} {
		incomplete := cfg
		mut(&incomplete)
		_, err := New(incomplete)
		assert.Error(t, err, name)
	}

	reg := prometheus.NewRegistry()
	withMetrics := cfg
	withMetrics.Metrics = reg
	c1, err := New(withMetrics)
	require.NoError(t, err)
	t.Cleanup(c1.queue.ShutDown)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	assert.Equal(t, "kruise_sidecar_terminations_total", mfs[0].GetName())
	assert.Len(t, mfs[0].GetMetric(), 3, "every mechanism is exported from the start")
	_, err = New(withMetrics)
	assert.ErrorContains(t, err, "registering sidecar terminator metrics")
}
