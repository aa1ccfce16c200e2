package spreadinjection

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

// admitted applies res's patch to pod and returns the pod the API server would store.
func admitted(t *testing.T, pod *corev1.Pod, res server.Result) *corev1.Pod {
	t.Helper()
	require.True(t, res.Allowed, "refused: %s %v", res.Message, res.Err)
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	if len(res.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(res.Patch)
		require.NoError(t, err)
		raw, err = p.Apply(raw)
		require.NoError(t, err)
	}
	out := &corev1.Pod{}
	require.NoError(t, json.Unmarshal(raw, out))
	return out
}

func subsetOf(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	m, ok := spread.Matched(pod)
	if !ok {
		return ""
	}
	return m.Subset
}

func requiredZone(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
}

func TestCreatePlacesTargetedPods(t *testing.T) {
	ctx := context.Background()
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...))
	w, _ := newWebhook(s)

	p1 := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	got := admitted(t, p1, w.AdmitCreate(ctx, createReq(t, p1, false)))
	assert.Equal(t, "a", subsetOf(t, got))
	assert.Equal(t, "a", requiredZone(got))
	assert.Equal(t, "img", got.Spec.Containers[0].Image)
	st := s.status(t, "ws").VersionedSubsetStatuses[spread.VersionIgnored]
	require.Len(t, st, 2)
	assert.Equal(t, int32(0), st[0].MissingReplicas)
	assert.Equal(t, map[string]metav1.Time{"app-aaaaa": metav1.NewTime(t0)}, st[0].CreatingPods)

	// The cache still shows the old status: the ledger starts from what this replica wrote.
	p2 := ownedPod("app-bbbbb", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	got = admitted(t, p2, w.AdmitCreate(ctx, createReq(t, p2, false)))
	assert.Equal(t, "b", subsetOf(t, got))
	assert.Equal(t, "b", requiredZone(got))
	assert.Equal(t, 1, s.writes, "unlimited subset b needs no status write")
	assert.Equal(t, 0, s.gets, "no conflict, no live read")
}

func TestCreateLeavesOtherPodsAlone(t *testing.T) {
	ctx := context.Background()
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...))
	w, _ := newWebhook(s)
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare"}},
		ownedPod("other-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "other", nil),
		ownedPod("app-aaaaa", "example.com/v1", "CloneSet", "app", nil),
	} {
		res := w.AdmitCreate(ctx, createReq(t, pod, false))
		assert.True(t, res.Allowed)
		assert.Empty(t, res.Patch, pod.Name)
	}
	// kube-system and kruise's namespace are never acted on.
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	req := createReq(t, pod, false)
	req.Namespace = "kruise-system"
	assert.Empty(t, w.AdmitCreate(ctx, req).Patch)
	assert.Equal(t, 0, s.writes)
}

func TestCreateDeploymentPods(t *testing.T) {
	ctx := context.Background()
	s := newFakeSpreads(spreadOf("ws", "apps/v1", "Deployment", "web", zones(cnt(1), nil)...))
	w, _ := newWebhook(s)
	w.ReplicaSetOwner = func(ns, name string) *metav1.OwnerReference {
		if name == "web-cached" {
			return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		}
		return nil
	}
	cached := ownedPod("web-cached-aaaaa", "apps/v1", "ReplicaSet", "web-cached", map[string]string{"pod-template-hash": "cached"})
	got := admitted(t, cached, w.AdmitCreate(ctx, createReq(t, cached, false)))
	assert.Equal(t, "a", subsetOf(t, got))
	// A ReplicaSet not cached yet: its Deployment follows from its name and the pod's hash.
	fresh := ownedPod("web-5d4f-aaaaa", "apps/v1", "ReplicaSet", "web-5d4f", map[string]string{"pod-template-hash": "5d4f"})
	got = admitted(t, fresh, w.AdmitCreate(ctx, createReq(t, fresh, false)))
	assert.Equal(t, "a", subsetOf(t, got), "a new version has its own subset list (surge)")
	st := s.status(t, "ws").VersionedSubsetStatuses
	assert.Contains(t, st["cached"][0].CreatingPods, "web-cached-aaaaa")
	assert.Contains(t, st["5d4f"][0].CreatingPods, "web-5d4f-aaaaa")
	// A ReplicaSet of another Deployment is not spread.
	other := ownedPod("api-5d4f-aaaaa", "apps/v1", "ReplicaSet", "api-5d4f", map[string]string{"pod-template-hash": "5d4f"})
	assert.Empty(t, w.AdmitCreate(ctx, createReq(t, other, false)).Patch)
}

func TestCreateDryRunWritesNothing(t *testing.T) {
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...))
	w, _ := newWebhook(s)
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	got := admitted(t, pod, w.AdmitCreate(context.Background(), createReq(t, pod, true)))
	assert.Equal(t, "a", subsetOf(t, got))
	assert.Equal(t, 0, s.writes)
}

func TestCreateRetriesConflictsOnTheLiveStatus(t *testing.T) {
	ctx := context.Background()
	ws := spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...)
	s := newFakeSpreads(ws)
	// Another replica took a's last place: the live status says so, the cache does not.
	s.live["ns/ws"].Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{
		spread.VersionIgnored: {{Name: "a", MissingReplicas: 0, CreatingPods: map[string]metav1.Time{"app-zzzzz": metav1.NewTime(t0)}}, {Name: "b", MissingReplicas: -1}}}
	s.bump(s.live["ns/ws"])
	w, _ := newWebhook(s)
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	got := admitted(t, pod, w.AdmitCreate(ctx, createReq(t, pod, false)))
	assert.Equal(t, "b", subsetOf(t, got), "placed on the status read after the conflict")
	assert.Equal(t, 1, s.gets)
}

func TestCreateRefusedWhenTheStatusCannotBeWritten(t *testing.T) {
	ctx := context.Background()
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(5), nil)...))
	s.conflicts = 100
	w, rec := newWebhook(s)
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	res := w.AdmitCreate(ctx, createReq(t, pod, false))
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "WorkloadSpread ns/ws could not place the pod")
	assert.Contains(t, res.Err.Error(), "after 5 attempts")
	assert.Contains(t, <-rec.Events, EventAdmissionFailed)

	s.conflicts, s.fail = 0, errors.New("etcd unavailable")
	res = w.AdmitCreate(ctx, createReq(t, pod, false))
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "etcd unavailable")
}

func TestCreateBadPatchRecordsNothing(t *testing.T) {
	subsets := zones(cnt(5), nil)
	subsets[0].Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"not a list"}}`)}
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", subsets...))
	w, _ := newWebhook(s)
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	res := w.AdmitCreate(context.Background(), createReq(t, pod, false))
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), `subset "a": patch`)
	assert.Equal(t, 0, s.writes)
}

func TestCreateGeneratedNameAndPatch(t *testing.T) {
	subsets := zones(cnt(5), nil)
	subsets[0].Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"pool":"a"}},"spec":{"containers":[{"name":"main","env":[{"name":"POOL","value":"a"}]}]}}`)}
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", subsets...))
	w, _ := newWebhook(s)
	pod := ownedPod("", "apps.kruise.io/v1alpha1", "CloneSet", "app", map[string]string{"app": "x"})
	pod.GenerateName = "app-"
	got := admitted(t, pod, w.AdmitCreate(context.Background(), createReq(t, pod, false)))
	m, ok := spread.Matched(got)
	require.True(t, ok)
	assert.Equal(t, appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: "a", UID: "key-1"}, *m)
	assert.Equal(t, map[string]string{"app": "x", "pool": "a"}, got.Labels)
	assert.Equal(t, []corev1.EnvVar{{Name: "POOL", Value: "a"}}, got.Spec.Containers[0].Env)
	assert.Contains(t, s.status(t, "ws").VersionedSubsetStatuses[spread.VersionIgnored][0].CreatingPods, "key-1")
}

func TestCreatePercentReadsTheTarget(t *testing.T) {
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(pct("50%"), pct("50%"))...))
	w, _ := newWebhook(s)
	w.Targets = fakeTargets{"CloneSet/app": {Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": "app"}, "spec": map[string]any{"replicas": int64(3)}}}}
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	admitted(t, pod, w.AdmitCreate(context.Background(), createReq(t, pod, false)))
	st := s.status(t, "ws").VersionedSubsetStatuses[spread.VersionIgnored]
	assert.Equal(t, int32(1), st[0].MissingReplicas, "50% of 3 is 2, one taken")
	assert.Equal(t, int32(2), st[1].MissingReplicas)

	// No target (deleted): percentages count 0 replicas; the pod still gets a subset.
	s2 := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(pct("50%"), pct("50%"))...))
	w2, rec := newWebhook(s2)
	w2.Targets = fakeTargets{}
	res := w2.AdmitCreate(context.Background(), createReq(t, pod, false))
	got := admitted(t, pod, res)
	assert.Equal(t, "a", subsetOf(t, got))
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0], "no schedulable subset of WorkloadSpread ws had room")
	assert.Contains(t, <-rec.Events, EventNoRoom)
}

func TestCreateFindsASpreadTheCacheLacks(t *testing.T) {
	s := newFakeSpreads()
	w, _ := newWebhook(s)
	ws := spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...)
	ws.ResourceVersion = "7"
	s.live["ns/ws"] = ws
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	got := admitted(t, pod, w.AdmitCreate(context.Background(), createReq(t, pod, false)))
	assert.Equal(t, "a", subsetOf(t, got))
	assert.Equal(t, 1, s.lists)

	// A pod its spread's targetFilter leaves out is not listed live for.
	s2 := newFakeSpreads(func() *appsv1alpha1.WorkloadSpread {
		ws := spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...)
		ws.Spec.TargetFilter = &appsv1alpha1.TargetFilter{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}}
		return ws
	}())
	w2, _ := newWebhook(s2)
	assert.Empty(t, w2.AdmitCreate(context.Background(), createReq(t, pod, false)).Patch)
	assert.Equal(t, 0, s2.lists)
	worker := ownedPod("app-bbbbb", "apps.kruise.io/v1alpha1", "CloneSet", "app", map[string]string{"role": "worker"})
	assert.Equal(t, "a", subsetOf(t, admitted(t, worker, w2.AdmitCreate(context.Background(), createReq(t, worker, false)))))
}

func TestCreateSkipsInactivePods(t *testing.T) {
	s := newFakeSpreads(spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(1), nil)...))
	w, _ := newWebhook(s)
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	pod.Status.Phase = corev1.PodSucceeded
	assert.Empty(t, w.AdmitCreate(context.Background(), createReq(t, pod, false)).Patch)
}

func placedPod(subset string) *corev1.Pod {
	pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	_ = spread.SetMatched(pod, appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: subset})
	return pod
}

func recordedSpread() *appsv1alpha1.WorkloadSpread {
	ws := spreadOf("ws", "apps.kruise.io/v1alpha1", "CloneSet", "app", zones(cnt(2), nil)...)
	ws.Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{
		spread.VersionIgnored: {{Name: "a", Replicas: 2, MissingReplicas: 0}, {Name: "b", MissingReplicas: -1}}}
	return ws
}

func TestDeleteRecordsDeletingPods(t *testing.T) {
	ctx := context.Background()
	s := newFakeSpreads(recordedSpread())
	w, _ := newWebhook(s)
	res := w.AdmitDelete(ctx, deleteReq(t, placedPod("a"), false))
	assert.True(t, res.Allowed)
	st := s.status(t, "ws").VersionedSubsetStatuses[spread.VersionIgnored][0]
	assert.Equal(t, int32(1), st.MissingReplicas)
	assert.Equal(t, map[string]metav1.Time{"app-aaaaa": metav1.NewTime(t0)}, st.DeletingPods)

	// The same pod evicted next: already recorded, nothing written.
	w.Pods = fakePods{"ns/app-aaaaa": placedPod("a")}
	assert.True(t, w.AdmitDelete(ctx, evictReq("app-aaaaa", false)).Allowed)
	assert.Equal(t, 1, s.writes)
}

func TestEvictionRecordsDeletingPods(t *testing.T) {
	s := newFakeSpreads(recordedSpread())
	w, _ := newWebhook(s)
	w.Pods = fakePods{"ns/app-aaaaa": placedPod("a")}
	assert.True(t, w.AdmitDelete(context.Background(), evictReq("app-aaaaa", false)).Allowed)
	assert.Contains(t, s.status(t, "ws").VersionedSubsetStatuses[spread.VersionIgnored][0].DeletingPods, "app-aaaaa")
}

func TestDeleteRecordsNothing(t *testing.T) {
	ctx := context.Background()
	unannotated := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
	terminating := placedPod("a")
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	for name, do := range map[string]func(w *Webhook) server.Result{
		"dry run":            func(w *Webhook) server.Result { return w.AdmitDelete(ctx, deleteReq(t, placedPod("a"), true)) },
		"eviction dry run":   func(w *Webhook) server.Result { return w.AdmitDelete(ctx, evictReq("app-aaaaa", true)) },
		"unannotated":        func(w *Webhook) server.Result { return w.AdmitDelete(ctx, deleteReq(t, unannotated, false)) },
		"terminating":        func(w *Webhook) server.Result { return w.AdmitDelete(ctx, deleteReq(t, terminating, false)) },
		"unlimited subset":   func(w *Webhook) server.Result { return w.AdmitDelete(ctx, deleteReq(t, placedPod("b"), false)) },
		"evicted pod absent": func(w *Webhook) server.Result { return w.AdmitDelete(ctx, evictReq("gone", false)) },
		"spread gone": func(w *Webhook) server.Result {
			pod := ownedPod("app-aaaaa", "apps.kruise.io/v1alpha1", "CloneSet", "app", nil)
			_ = spread.SetMatched(pod, appsv1alpha1.InjectWorkloadSpread{Name: "nope", Subset: "a"})
			return w.AdmitDelete(ctx, deleteReq(t, pod, false))
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newFakeSpreads(recordedSpread())
			w, _ := newWebhook(s)
			w.Pods = fakePods{"ns/app-aaaaa": placedPod("a")}
			assert.True(t, do(w).Allowed)
			assert.Equal(t, 0, s.writes)
		})
	}
}

func TestDeleteNeverDenies(t *testing.T) {
	s := newFakeSpreads(recordedSpread())
	s.fail = errors.New("etcd unavailable")
	w, _ := newWebhook(s)
	assert.True(t, w.AdmitDelete(context.Background(), deleteReq(t, placedPod("a"), false)).Allowed)
	req := deleteReq(t, placedPod("a"), false)
	req.OldObject.Raw = []byte("{bad")
	assert.True(t, w.AdmitDelete(context.Background(), req).Allowed)
}
