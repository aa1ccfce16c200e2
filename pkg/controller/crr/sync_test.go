package crr

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
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
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestSyncActive(t *testing.T) {
	inProgress := func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
		c.Status.ContainerRecreateStates = []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{
			{Name: "main", Phase: appsv1alpha1.ContainerRecreateRequestSucceeded},
			{Name: "sidecar", Phase: appsv1alpha1.ContainerRecreateRequestRecreating, IsKilled: true},
		}
	}
	replaced := runningPod(func(p *corev1.Pod) { p.UID = "pod-uid-2" })
	live := []*coordinationv1.Lease{lease(nodeName, 5*time.Second)}

	tests := []struct {
		name    string
		crr     *appsv1alpha1.ContainerRecreateRequest
		pods    []*corev1.Pod
		apiOnly []*corev1.Pod
		leases  []*coordinationv1.Lease
		// startedAgo is how long ago the controller started (zero: long ago).
		startedAgo time.Duration

		wantAfter   time.Duration
		wantMessage string // non-empty: completed with it
		wantReason  string
	}{
		{
			name: "healthy: next look when the heartbeat would expire",
			crr:  admittedCRR(time.Minute), pods: []*corev1.Pod{runningPod()}, leases: live,
			wantAfter: 35 * time.Second,
		},
		{
			name: "deadline before heartbeat expiry: requeued exactly at the deadline",
			crr:  admittedCRR(8*time.Second, gen.SetCRRActiveDeadlineSeconds(10)), pods: []*corev1.Pod{runningPod()}, leases: live,
			wantAfter: 2 * time.Second,
		},
		{
			// 18446744074 s would wrap round to 290 ms as a Duration: it must not end the CRR.
			name: "a deadline too large for a Duration is far away, not past",
			crr:  admittedCRR(time.Minute, gen.SetCRRActiveDeadlineSeconds(18446744074)), pods: []*corev1.Pod{runningPod()}, leases: live,
			wantAfter: 35 * time.Second,
		},
		{
			name: "deadline passed: completed, remaining containers Failed",
			crr:  admittedCRR(10*time.Second, gen.SetCRRActiveDeadlineSeconds(10), inProgress), pods: []*corev1.Pod{runningPod()}, leases: live,
			wantMessage: "exceeded activeDeadlineSeconds (10s)", wantReason: ReasonDeadlineExceeded,
		},
		{
			name: "pod gone",
			crr:  admittedCRR(time.Minute, inProgress), leases: live,
			wantMessage: "pod has gone", wantReason: ReasonPodGone,
		},
		{
			name: "pod replaced",
			crr:  admittedCRR(time.Minute), pods: []*corev1.Pod{replaced}, apiOnly: nil, leases: live,
			wantMessage: "pod was replaced", wantReason: ReasonPodReplaced,
		},
		{
			name: "cache lags: pod missing from the cache but on the server is not gone",
			crr:  admittedCRR(time.Minute), apiOnly: []*corev1.Pod{runningPod()}, leases: live,
			wantAfter: 35 * time.Second,
		},
		{
			name: "no lease, within the grace after admission: next look at its end",
			crr:  admittedCRR(10 * time.Second), pods: []*corev1.Pod{runningPod()},
			wantAfter: 30 * time.Second,
		},
		{
			name: "no lease after the grace: completed",
			crr:  admittedCRR(40 * time.Second), pods: []*corev1.Pod{runningPod()},
			wantMessage: `no live kruise-daemon on node "node-a"`, wantReason: ReasonNoLiveDaemon,
		},
		{
			name: "stale lease after the grace: completed",
			crr:  admittedCRR(time.Minute), pods: []*corev1.Pod{runningPod()}, leases: []*coordinationv1.Lease{lease(nodeName, 41*time.Second)},
			wantMessage: `no live kruise-daemon on node "node-a"`, wantReason: ReasonNoLiveDaemon,
		},
		{
			name: "another node's lease does not count",
			crr:  admittedCRR(time.Minute), pods: []*corev1.Pod{runningPod()}, leases: []*coordinationv1.Lease{lease("node-b", time.Second)},
			wantMessage: `no live kruise-daemon on node "node-a"`, wantReason: ReasonNoLiveDaemon,
		},
		{
			name: "stale lease, controller just started: grace counts from its start",
			crr:  admittedCRR(time.Hour), pods: []*corev1.Pod{runningPod()}, leases: []*coordinationv1.Lease{lease(nodeName, time.Hour)},
			startedAgo: 15 * time.Second, wantAfter: 25 * time.Second,
		},
		{
			name: "deadline wins over a missing pod",
			crr:  admittedCRR(time.Minute, gen.SetCRRActiveDeadlineSeconds(30)), leases: live,
			wantMessage: "exceeded activeDeadlineSeconds (30s)", wantReason: ReasonDeadlineExceeded,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{pods: tc.pods, apiOnly: tc.apiOnly, leases: tc.leases, crrs: []*appsv1alpha1.ContainerRecreateRequest{tc.crr}})
			if tc.startedAgo > 0 {
				f.ctrl.startedAt = now.Add(-tc.startedAgo)
			}
			after, err := f.sync(t)
			require.NoError(t, err)
			if tc.wantMessage == "" {
				assert.Equal(t, tc.wantAfter, after)
				assert.Empty(t, f.writes())
				assert.Empty(t, f.events())
				return
			}
			assert.Zero(t, after)
			writes := f.writes()
			require.Len(t, writes, 1)
			assert.Equal(t, "status", writes[0].GetSubresource())
			upd := writes[0].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.ContainerRecreateRequest)
			assert.Equal(t, tc.crr.ResourceVersion, upd.ResourceVersion, "the status write carries the resourceVersion read")

			got := f.getCRR(t)
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
			assert.Equal(t, tc.wantMessage, got.Status.Message)
			assert.True(t, got.Status.CompletionTime.Time.Equal(now))
			want := map[string]appsv1alpha1.ContainerRecreateRequestPhase{
				"main": appsv1alpha1.ContainerRecreateRequestFailed, "sidecar": appsv1alpha1.ContainerRecreateRequestFailed,
			}
			for _, st := range tc.crr.Status.ContainerRecreateStates {
				if st.Phase == appsv1alpha1.ContainerRecreateRequestSucceeded {
					want[st.Name] = st.Phase
				}
			}
			require.Len(t, got.Status.ContainerRecreateStates, 2)
			for _, st := range got.Status.ContainerRecreateStates {
				assert.Equal(t, want[st.Name], st.Phase, st.Name)
				if st.Phase == appsv1alpha1.ContainerRecreateRequestFailed {
					assert.Equal(t, tc.wantMessage, st.Message)
				}
			}
			assert.Equal(t, []string{"Warning " + tc.wantReason + " " + tc.wantMessage}, f.events())

			// The informer delivering the write counts it once, under the Event's reason.
			f.ctrl.countCompletion(tc.crr, got)
			assert.Equal(t, map[string]float64{`{reason="` + tc.wantReason + `"}`: 1}, f.completedNonZero(t))
		})
	}
}

// A status write that conflicts (the daemon wrote first, perhaps completing
// it) is returned as a conflict, to be read and decided again.
func TestSyncActiveConflict(t *testing.T) {
	f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{admittedCRR(time.Minute)}})
	f.kruise.PrependReactor("update", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "containerrecreaterequests"}, crrName, errors.New("stale"))
	})
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, f.events())
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, f.getCRR(t).Status.Phase)
	_, noted := f.ctrl.ownCompletions.Load(types.UID("crr-uid"))
	assert.False(t, noted, "a completion that was not written is not noted")
}

func TestSyncFinished(t *testing.T) {
	inactive := func(c *appsv1alpha1.ContainerRecreateRequest) {
		delete(c.Labels, appsv1alpha1.ContainerRecreateRequestActiveKey)
	}
	tests := []struct {
		name         string
		crr          *appsv1alpha1.ContainerRecreateRequest
		wantAfter    time.Duration
		wantUnlabel  bool
		wantDeletion bool
	}{
		{name: "active label removed", crr: completedCRR(time.Second), wantUnlabel: true},
		{name: "nothing left to do", crr: completedCRR(time.Second, inactive)},
		{name: "ttl not reached: next look at expiry", crr: completedCRR(3*time.Second, inactive, gen.SetCRRTTLSecondsAfterFinished(10)), wantAfter: 7 * time.Second},
		{name: "label removed and ttl not reached", crr: completedCRR(3*time.Second, gen.SetCRRTTLSecondsAfterFinished(10)), wantUnlabel: true, wantAfter: 7 * time.Second},
		{name: "ttl reached: deleted", crr: completedCRR(10*time.Second, inactive, gen.SetCRRTTLSecondsAfterFinished(10)), wantDeletion: true},
		{name: "ttl zero: deleted at once after unlabelling", crr: completedCRR(0, gen.SetCRRTTLSecondsAfterFinished(0)), wantUnlabel: true, wantDeletion: true},
		{name: "ttl without completionTime counts from creation", crr: completedCRR(0, inactive, gen.SetCRRTTLSecondsAfterFinished(30), func(c *appsv1alpha1.ContainerRecreateRequest) {
			c.Status.CompletionTime = nil
		}), wantDeletion: true},
		{name: "rejected at admission (never labelled)", crr: completedCRR(time.Second, gen.SetCRRTTLSecondsAfterFinished(5), func(c *appsv1alpha1.ContainerRecreateRequest) {
			c.Labels = nil
		}), wantAfter: 4 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Everything that would end an active request holds too: no
			// pod, no daemon, deadline long past. None may touch the phase.
			tc.crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
			if tc.crr.Labels != nil {
				tc.crr.Labels["user"] = "label"
			}
			f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{tc.crr}})
			after, err := f.sync(t)
			require.NoError(t, err)
			assert.Equal(t, tc.wantAfter, after)

			var unlabelled, deleted bool
			for _, a := range f.writes() {
				switch {
				case a.GetVerb() == "patch" && a.GetSubresource() == "":
					// The label alone, with the resourceVersion read.
					p := a.(k8stesting.PatchAction)
					assert.Equal(t, types.MergePatchType, p.GetPatchType())
					assert.JSONEq(t, `{"metadata": {"labels": {"crr.apps.kruise.io/active": null}, "resourceVersion": "5"}}`, string(p.GetPatch()))
					unlabelled = true
				case a.GetVerb() == "delete":
					del := a.(k8stesting.DeleteAction)
					require.NotNil(t, del.GetDeleteOptions().Preconditions)
					assert.Equal(t, tc.crr.UID, *del.GetDeleteOptions().Preconditions.UID)
					// The one the label removal returned, if any.
					wantRV := "5"
					if unlabelled {
						wantRV = "6"
					}
					assert.Equal(t, wantRV, *del.GetDeleteOptions().Preconditions.ResourceVersion)
					deleted = true
				default:
					t.Errorf("unexpected write %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			assert.Equal(t, tc.wantUnlabel, unlabelled, "active label removal")
			assert.Equal(t, tc.wantDeletion, deleted, "deletion")
			assert.Empty(t, f.events())
			if unlabelled && !deleted {
				// Every other label stays, and nothing else changes.
				got := f.getCRR(t)
				want := maps.Clone(tc.crr.Labels)
				delete(want, appsv1alpha1.ContainerRecreateRequestActiveKey)
				assert.Equal(t, want, got.Labels)
				assert.Contains(t, got.Labels, "user")
				assert.Equal(t, tc.crr.Spec, got.Spec)
				assert.Equal(t, tc.crr.Status.Phase, got.Status.Phase)
			}
		})
	}
}

// The active label is removed with the resourceVersion read: a CRR changed
// since is decided again.
func TestSyncFinishedConflict(t *testing.T) {
	f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{completedCRR(time.Second)}})
	f.setStored(t, func(c *appsv1alpha1.ContainerRecreateRequest) { c.Labels["user"] = "label" })
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Contains(t, f.getCRR(t).Labels, appsv1alpha1.ContainerRecreateRequestActiveKey)
}

func TestSyncMissingCRR(t *testing.T) {
	f := newFixture(t, objects{})
	after, err := f.sync(t)
	require.NoError(t, err)
	assert.Zero(t, after)
	assert.Empty(t, f.writes())
}

// A user may remove the active label of an unfinished request (OpenKruise's
// admission allows it), which would hide it from the daemon for ever: the
// controller puts it back and says so.
func TestSyncRestoresTheActiveLabel(t *testing.T) {
	for name, mut := range map[string]func(*appsv1alpha1.ContainerRecreateRequest){
		"removed": func(c *appsv1alpha1.ContainerRecreateRequest) {
			delete(c.Labels, appsv1alpha1.ContainerRecreateRequestActiveKey)
		},
		"changed": func(c *appsv1alpha1.ContainerRecreateRequest) {
			c.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey] = "false"
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{admittedCRR(time.Minute, mut)},
				pods: []*corev1.Pod{runningPod()}, leases: []*coordinationv1.Lease{lease(nodeName, 5*time.Second)}})
			after, err := f.sync(t)
			require.NoError(t, err)
			assert.Zero(t, after, "the label's return syncs it again")
			got := f.getCRR(t)
			assert.Equal(t, "true", got.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey])
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase, "nothing else changed")
			ev := f.events()
			require.Len(t, ev, 1)
			assert.Contains(t, ev[0], "Warning "+ReasonActiveLabelRestored)
		})
	}
}

// A request kruise-controller completes (its deadline passed) carries the
// snapshot of the containers recreated by then, from the pod it was routed
// to: main, restarted since the request's creation; not sidecar, running
// since before it.
func TestCompletionSnapshotsRecreatedContainers(t *testing.T) {
	crr := admittedCRR(10*time.Second, gen.SetCRRActiveDeadlineSeconds(10))
	pod := runningPod(func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", ContainerID: "containerd://new", RestartCount: 3, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}}}
		p.Status.ContainerStatuses[1].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Hour))}
	})
	f := newFixture(t, objects{pods: []*corev1.Pod{pod}, leases: []*coordinationv1.Lease{lease(nodeName, 5*time.Second)},
		crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	require.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Equal(t, []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus{
		{Name: "main", Ready: true, RestartCount: 3, ContainerID: "containerd://new"},
	}, got.Status.ContainerStatusSnapshot)
}

// A request the webhook routed at create is acted on once admitted, so the daemon's first status
// write can make admission's routing patch fail: the unready-acquired annotation is then written
// on its own, with the time the PreRecreateGrace condition records, in any phase.
func TestSyncRecordsAMissingUnreadyAcquired(t *testing.T) {
	since := now.Add(-3 * time.Second)
	for _, tc := range []struct {
		phase appsv1alpha1.ContainerRecreateRequestPhase
		given string // the annotation as the creator wrote it
	}{
		{appsv1alpha1.ContainerRecreateRequestRecreating, ""},
		{appsv1alpha1.ContainerRecreateRequestCompleted, ""},
		{appsv1alpha1.ContainerRecreateRequestRecreating, "not-a-time"},
	} {
		t.Run(string(tc.phase)+"/"+tc.given, func(t *testing.T) {
			crr := admittedCRR(time.Minute, gen.SetCRRPhase(tc.phase), func(c *appsv1alpha1.ContainerRecreateRequest) {
				if tc.given != "" {
					c.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: tc.given}
				}
				meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: appsv1alpha1.ContainerRecreateRequestPreRecreateGrace,
					Status: metav1.ConditionTrue, Reason: appsv1alpha1.ContainerRecreateRequestPreRecreateGrace, LastTransitionTime: metav1.NewTime(since)})
			})
			f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
			_, err := f.sync(t)
			require.NoError(t, err)
			assert.Equal(t, since.UTC().Format(time.RFC3339), f.getCRR(t).Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
			require.Len(t, f.writes(), 1, "the annotation alone")
			assert.Equal(t, "patch", f.writes()[0].GetVerb())
		})
	}
}

// The annotation as admission wrote it is left alone: no write, so no loop of updates.
func TestSyncLeavesAnUnreadyAcquiredAsWritten(t *testing.T) {
	since := now.Add(-3 * time.Second)
	crr := admittedCRR(time.Minute, gen.SetCRRPhase(appsv1alpha1.ContainerRecreateRequestCompleted), func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: since.UTC().Format(time.RFC3339)}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: appsv1alpha1.ContainerRecreateRequestPreRecreateGrace,
			Status: metav1.ConditionTrue, Reason: appsv1alpha1.ContainerRecreateRequestPreRecreateGrace, LastTransitionTime: metav1.NewTime(since)})
	})
	f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	for _, w := range f.writes() {
		if p, ok := w.(k8stesting.PatchAction); ok {
			assert.NotContains(t, string(p.GetPatch()), appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
		}
	}
}
