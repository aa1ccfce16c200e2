package recreate

import (
	"context"
	"encoding/json"
	"errors"
	"k8s.io/client-go/tools/cache"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func unreadyGrace(s int64) func(*appsv1alpha1.ContainerRecreateRequest) {
	return func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To(s)}
	}
}

func gatedPod(mut ...func(*corev1.Pod)) *corev1.Pod {
	return withPod(func(p *corev1.Pod) {
		p.ResourceVersion = "7"
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
		}
		for _, m := range mut {
			m(p)
		}
	})
}

// kruiseCondition sets the pod's KruisePodReady condition.
func kruiseCondition(status corev1.ConditionStatus, reason, message string, since time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions[1] = corev1.PodCondition{
			Type: appsv1alpha1.KruisePodReadyConditionType, Status: status, Reason: reason, Message: message,
			LastTransitionTime: metav1.NewTime(since),
		}
	}
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
	crr := newCRR(time.Second, "main")
	unreadyGrace(5)(crr)
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{gatedPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})

	_, err := f.sync(t)
	require.NoError(t, err)
	patches := f.podPatches(t)
	require.Len(t, patches, 1)
	cond := patchedCondition(t, patches[0], "7")
	assert.Equal(t, map[string]any{
		"type": "KruisePodReady", "status": "False", "reason": "ContainerRecreating",
		"message":            "ContainerRecreateRequest restart-web is recreating containers",
		"lastTransitionTime": now.Format(time.RFC3339), "lastProbeTime": nil,
	}, cond)

	got := f.getCRR(t)
	assert.Equal(t, now.Format(time.RFC3339), got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
	assert.Equal(t, podUID, got.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey], "admitted in the same patch")
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
		// wantPatch: a condition is written; wantSince: the annotation ("" none).
		wantPatch bool
		wantSince string
	}{
		{name: "gate and grace", pod: gatedPod(), grace: ptr.To[int64](5), wantPatch: true, wantSince: now.Format(time.RFC3339)},
		{name: "no gate", pod: runningPod(), grace: ptr.To[int64](5)},
		{name: "no grace", pod: gatedPod()},
		{name: "zero grace", pod: gatedPod(), grace: ptr.To[int64](0)},
		{
			name:  "already ours for another CRR: transition time kept, message names this one",
			pod:   gatedPod(kruiseCondition(corev1.ConditionFalse, unreadyReason, "ContainerRecreateRequest other is recreating containers", now.Add(-time.Minute))),
			grace: ptr.To[int64](5), wantPatch: true, wantSince: now.Add(-time.Minute).Format(time.RFC3339),
		},
		{
			name:  "False by someone else: left alone, its period counts",
			pod:   gatedPod(kruiseCondition(corev1.ConditionFalse, "Maintenance", "", now.Add(-time.Minute))),
			grace: ptr.To[int64](5), wantSince: now.Add(-time.Minute).Format(time.RFC3339),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crr := newCRR(time.Second, "main")
			if tc.grace != nil {
				unreadyGrace(*tc.grace)(crr)
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
				assert.Equal(t, "ContainerRecreateRequest restart-web is recreating containers", cond["message"])
			}
			got := f.getCRR(t)
			assert.Equal(t, tc.wantSince, got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
			assert.NotEmpty(t, got.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey], "admitted")
		})
	}
}

// A pod changed since it was read fails the patch with a conflict: the CRR
// is not admitted and is decided again.
func TestAdmitMarkUnreadyConflict(t *testing.T) {
	crr := newCRR(time.Second, "main")
	unreadyGrace(5)(crr)
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

func TestRestoreReadyAfterCompletion(t *testing.T) {
	ours := kruiseCondition(corev1.ConditionFalse, unreadyReason, "ContainerRecreateRequest restart-web is recreating containers", now.Add(-time.Minute))
	other := func(name string, mut ...func(*appsv1alpha1.ContainerRecreateRequest)) *appsv1alpha1.ContainerRecreateRequest {
		c := named(name, admittedCRR(time.Second, mut...))
		c.UID = types.UID("uid-" + name)
		return c
	}
	tests := []struct {
		name        string
		crr         *appsv1alpha1.ContainerRecreateRequest
		pod         *corev1.Pod
		others      []*appsv1alpha1.ContainerRecreateRequest
		wantRestore bool
	}{
		{name: "set False by us, nothing else active: restored", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod(ours), wantRestore: true},
		{name: "completed by the deadline: restored too", crr: completedCRR(time.Second, unreadyGrace(5), func(c *appsv1alpha1.ContainerRecreateRequest) {
			c.Status.Message = "exceeded activeDeadlineSeconds (3s)"
			c.Status.ContainerRecreateStates[0].Phase = appsv1alpha1.ContainerRecreateRequestFailed
		}), pod: gatedPod(ours), wantRestore: true},
		{name: "another active CRR needs it not-ready", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod(ours),
			others: []*appsv1alpha1.ContainerRecreateRequest{other("next", unreadyGrace(3))}},
		{name: "another active CRR not yet admitted needs it too", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod(ours),
			others: []*appsv1alpha1.ContainerRecreateRequest{func() *appsv1alpha1.ContainerRecreateRequest {
				c := named("new", newCRR(0, "main"))
				c.UID = "uid-new"
				unreadyGrace(3)(c)
				return c
			}()}},
		{name: "another active CRR without grace does not hold it", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod(ours),
			others: []*appsv1alpha1.ContainerRecreateRequest{other("plain")}, wantRestore: true},
		{name: "a completed other CRR does not hold it", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod(ours),
			others: []*appsv1alpha1.ContainerRecreateRequest{named("old", completedCRR(time.Hour, unreadyGrace(5)))}, wantRestore: true},
		{name: "False by someone else: left alone", crr: completedCRR(time.Second, unreadyGrace(5)),
			pod: gatedPod(kruiseCondition(corev1.ConditionFalse, "Maintenance", "", now.Add(-time.Minute)))},
		{name: "already True", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod()},
		{name: "CRR without grace never touches readiness", crr: completedCRR(time.Second), pod: gatedPod(ours)},
		{name: "replaced pod is not ours", crr: completedCRR(time.Second, unreadyGrace(5)), pod: gatedPod(ours, func(p *corev1.Pod) { p.UID = "pod-uid-2" })},
		{name: "pod gone", crr: completedCRR(time.Second, unreadyGrace(5))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := objects{crrs: append([]*appsv1alpha1.ContainerRecreateRequest{tc.crr}, tc.others...)}
			if tc.pod != nil {
				o.pods = []*corev1.Pod{tc.pod}
			}
			f := newFixture(t, o)
			_, err := f.sync(t)
			require.NoError(t, err)
			patches := f.podPatches(t)
			events := f.events()
			if !tc.wantRestore {
				assert.Empty(t, patches)
				assert.NotContains(t, events, "Normal RestoredReady Set condition KruisePodReady=True on pod web")
				return
			}
			require.Len(t, patches, 1)
			cond := patchedCondition(t, patches[0], "7")
			assert.Equal(t, "True", cond["status"])
			assert.Equal(t, restoredReason, cond["reason"])
			assert.Equal(t, now.Format(time.RFC3339), cond["lastTransitionTime"])
			assert.Contains(t, events, "Normal RestoredReady Set condition KruisePodReady=True on pod web")
			c := f.livePod(t).Status.Conditions
			require.Len(t, c, 2)
			assert.Equal(t, corev1.ConditionTrue, c[1].Status)
		})
	}
}

// The cache says ours, the API server says it changed (the kubelet, or a
// restore already done): the live pod decides.
func TestRestoreReadyConfirmsOnLivePod(t *testing.T) {
	ours := kruiseCondition(corev1.ConditionFalse, unreadyReason, "x", now.Add(-time.Minute))
	f := newFixture(t, objects{
		pods: []*corev1.Pod{gatedPod(ours)},
		crrs: []*appsv1alpha1.ContainerRecreateRequest{completedCRR(time.Second, unreadyGrace(5))},
	})
	_, err := f.kube.CoreV1().Pods(testNS).UpdateStatus(context.Background(), gatedPod(), metav1.UpdateOptions{})
	require.NoError(t, err)
	f.kube.ClearActions()
	_, err = f.sync(t)
	require.NoError(t, err)
	assert.Empty(t, f.podPatches(t))
}

// A restore that conflicts is returned as a conflict; the completed CRR is
// synced again and nothing else happens first.
func TestRestoreReadyConflict(t *testing.T) {
	ours := kruiseCondition(corev1.ConditionFalse, unreadyReason, "x", now.Add(-time.Minute))
	f := newFixture(t, objects{
		pods: []*corev1.Pod{gatedPod(ours)},
		crrs: []*appsv1alpha1.ContainerRecreateRequest{completedCRR(time.Second, unreadyGrace(5))},
	})
	f.kube.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, podName, errors.New("changed"))
	})
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, f.writes(), "the active label stays until readiness is restored")
}

// A CRR deleted before it completed must not leave its pod not-ready forever.
func TestRestoreReadyAfterDeletion(t *testing.T) {
	ours := kruiseCondition(corev1.ConditionFalse, unreadyReason, "ContainerRecreateRequest restart-web is recreating containers", now.Add(-time.Minute))
	tests := []struct {
		name        string
		others      []*appsv1alpha1.ContainerRecreateRequest
		wantRestore bool
	}{
		{name: "nothing else needs it: restored", wantRestore: true},
		{name: "another active CRR with grace holds it", others: []*appsv1alpha1.ContainerRecreateRequest{
			func() *appsv1alpha1.ContainerRecreateRequest {
				c := named("next", admittedCRR(time.Second, unreadyGrace(3)))
				c.UID = "uid-next"
				return c
			}(),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{pods: []*corev1.Pod{gatedPod(ours)}, crrs: tc.others})
			deleted := admittedCRR(time.Second, unreadyGrace(5))
			f.ctrl.crrDeleted(cache.DeletedFinalStateUnknown{Key: fixtureKey, Obj: deleted})

			_, err := f.sync(t)
			require.NoError(t, err)
			patches := f.podPatches(t)
			if !tc.wantRestore {
				assert.Empty(t, patches)
				return
			}
			require.Len(t, patches, 1)
			assert.Equal(t, "True", patchedCondition(t, patches[0], "7")["status"])

			// Restored once: a later sync of the same key does nothing more.
			_, err = f.sync(t)
			require.NoError(t, err)
			assert.Len(t, f.podPatches(t), 1)
		})
	}
}
