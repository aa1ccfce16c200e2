package crr

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// gatedPod is runningPod with the KruisePodReady readiness gate, Ready and
// KruisePodReady (for an hour), changed by mods.
func gatedPod(mods ...gen.PodModifier) *corev1.Pod {
	p := runningPod(gen.SetPodResourceVersion("7"),
		gen.AddPodReadinessGate(appsv1alpha1.KruisePodReadyConditionType),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}),
		gen.SetPodCondition(corev1.PodCondition{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}))
	return gen.PodFrom(p, mods...)
}

// kruiseCondition sets the pod's KruisePodReady condition.
func kruiseCondition(status corev1.ConditionStatus, reason, message string, since time.Time) gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{
		Type: appsv1alpha1.KruisePodReadyConditionType, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(since),
	})
}

// podPatches returns the pod status patches the controller sent, decoded.
func (f *fixture) podPatches(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "patch" {
			continue
		}
		p := a.(k8stesting.PatchAction)
		assert.Equal(t, "pods", a.GetResource().Resource)
		assert.Equal(t, "status", a.GetSubresource())
		assert.Equal(t, types.StrategicMergePatchType, p.GetPatchType())
		var m map[string]any
		require.NoError(t, json.Unmarshal(p.GetPatch(), &m))
		out = append(out, m)
	}
	return out
}

// patchedCondition is the one condition a patch writes; it fails unless the
// patch touches exactly that condition and carries the resourceVersion.
func patchedCondition(t *testing.T, patch map[string]any, rv string) map[string]any {
	t.Helper()
	assert.Equal(t, map[string]any{"resourceVersion": rv}, patch["metadata"])
	conds := patch["status"].(map[string]any)["conditions"].([]any)
	require.Len(t, conds, 1)
	assert.Len(t, patch["status"].(map[string]any), 1)
	return conds[0].(map[string]any)
}

func (f *fixture) livePod(t *testing.T) *corev1.Pod {
	t.Helper()
	p, err := f.kube.CoreV1().Pods(testNS).Get(context.Background(), podName, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func TestAdmitMarksUnready(t *testing.T) {
	crr := gen.CRRFrom(newCRR(time.Second, "main"), gen.SetCRRUnreadyGracePeriodSeconds(5))
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{gatedPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})

	_, err := f.sync(t)
	require.NoError(t, err)
	patches := f.podPatches(t)
	require.Len(t, patches, 1)
	cond := patchedCondition(t, patches[0], "7")
	assert.Equal(t, map[string]any{
		"type": "KruisePodReady", "status": "False", "reason": "ContainerRecreating",
		"message":            `[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`,
		"lastTransitionTime": now.Format(time.RFC3339), "lastProbeTime": nil,
	}, cond)

	got := f.getCRR(t)
	assert.Equal(t, now.Format(time.RFC3339), got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
	// The same, in the form OpenKruise's v1beta1 clients read.
	grace := meta.FindStatusCondition(got.Status.Conditions, appsv1alpha1.ContainerRecreateRequestPreRecreateGrace)
	require.NotNil(t, grace, "PreRecreateGrace condition")
	assert.Equal(t, metav1.ConditionTrue, grace.Status)
	assert.True(t, grace.LastTransitionTime.Equal(&metav1.Time{Time: now}), "since %v", grace.LastTransitionTime)
	assert.Equal(t, podUID, got.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey], "admitted")
	live := f.livePod(t)
	assert.Len(t, live.Status.Conditions, 2, "the Ready condition is untouched")
	assert.Equal(t, []string{
		"Normal MarkedUnready Set condition KruisePodReady=False on pod web",
		"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a",
	}, f.events())
}

func TestAdmitMarksUnreadyOnlyWithGateAndGrace(t *testing.T) {
	tests := []struct {
		name  string
		pod   *corev1.Pod
		grace *int64
		// wantPatch: a condition is written, with wantMessage (default: this
		// CRR alone); wantSince: the annotation ("" none).
		wantPatch   bool
		wantSince   string
		wantMessage string
	}{
		{name: "gate and grace", pod: gatedPod(), grace: ptr.To[int64](5), wantPatch: true, wantSince: now.Format(time.RFC3339)},
		{name: "no gate", pod: runningPod(), grace: ptr.To[int64](5)},
		{name: "no grace", pod: gatedPod()},
		{name: "zero grace", pod: gatedPod(), grace: ptr.To[int64](0)},
		{
			name: "held for another CRR: transition time kept, this one added",
			pod: gatedPod(kruiseCondition(corev1.ConditionFalse, readinessgate.ReasonHeld,
				`[{"userAgent":"ContainerRecreateRequest","key":"default/other"}]`, now.Add(-time.Minute))),
			grace: ptr.To[int64](5), wantPatch: true, wantSince: now.Add(-time.Minute).Format(time.RFC3339),
			wantMessage: `[{"userAgent":"ContainerRecreateRequest","key":"default/other"},{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`,
		},
		{
			name:  "held by another user (a lifecycle hook): both hold it",
			pod:   gatedPod(kruiseCondition(corev1.ConditionFalse, "", `[{"userAgent":"Lifecycle","key":"default/web"}]`, now.Add(-time.Minute))),
			grace: ptr.To[int64](5), wantPatch: true, wantSince: now.Add(-time.Minute).Format(time.RFC3339),
			wantMessage: `[{"userAgent":"Lifecycle","key":"default/web"},{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`,
		},
		{
			name:  "False by someone else, in a form of its own: left alone, its period counts",
			pod:   gatedPod(kruiseCondition(corev1.ConditionFalse, "Maintenance", "node drain", now.Add(-time.Minute))),
			grace: ptr.To[int64](5), wantSince: now.Add(-time.Minute).Format(time.RFC3339),
		},
		{
			name:  "already held for this CRR (admission retried): nothing written",
			pod:   gatedPod(kruiseCondition(corev1.ConditionFalse, readinessgate.ReasonHeld, `[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`, now.Add(-time.Minute))),
			grace: ptr.To[int64](5), wantSince: now.Add(-time.Minute).Format(time.RFC3339),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crr := newCRR(time.Second, "main")
			if tc.grace != nil {
				crr = gen.CRRFrom(crr, gen.SetCRRUnreadyGracePeriodSeconds(*tc.grace))
			}
			f := newFixture(t, objects{apiOnly: []*corev1.Pod{tc.pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
			_, err := f.sync(t)
			require.NoError(t, err)
			patches := f.podPatches(t)
			if !tc.wantPatch {
				assert.Empty(t, patches)
			} else {
				require.Len(t, patches, 1)
				cond := patchedCondition(t, patches[0], tc.pod.ResourceVersion)
				assert.Equal(t, "False", cond["status"])
				assert.Equal(t, tc.wantSince, cond["lastTransitionTime"])
				want := tc.wantMessage
				if want == "" {
					want = `[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]`
				}
				assert.Equal(t, want, cond["message"])
			}
			got := f.getCRR(t)
			assert.Equal(t, tc.wantSince, got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
			if grace := meta.FindStatusCondition(got.Status.Conditions, appsv1alpha1.ContainerRecreateRequestPreRecreateGrace); tc.wantSince == "" {
				assert.Nil(t, grace)
			} else if assert.NotNil(t, grace) {
				assert.Equal(t, tc.wantSince, grace.LastTransitionTime.UTC().Format(time.RFC3339))
			}
			assert.NotEmpty(t, got.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey], "admitted")
		})
	}
}

// A pod changed since it was read fails the patch with a conflict: the CRR
// is not admitted and is decided again.
func TestAdmitMarkUnreadyConflict(t *testing.T) {
	crr := gen.CRRFrom(newCRR(time.Second, "main"), gen.SetCRRUnreadyGracePeriodSeconds(5))
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{gatedPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	f.kube.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, podName, errors.New("changed"))
	})
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, f.writes(), "not admitted")
	assert.Empty(t, f.events())
}
