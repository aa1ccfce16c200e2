package podbudget

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func indexer(t *testing.T, objs ...metav1.Object) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, idx.Add(o))
	}
	return idx
}

// testListers hold Deployment web (3), its ReplicaSet web-abc, a ReplicaSet solo of its own (2),
// a Rollout's ReplicaSet canary-abc, CloneSet cs (5), Advanced StatefulSet db (nil replicas),
// StatefulSet gone (being deleted), and read ReplicationController rc's scale (4).
func testListers(t *testing.T) Listers {
	meta := func(name string, owner *metav1.OwnerReference) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID("uid-" + name)}
		if owner != nil {
			m.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return m
	}
	deleting := meta("gone", nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	return Listers{
		Deployments: appslisters.NewDeploymentLister(indexer(t, &appsv1.Deployment{ObjectMeta: meta("web", nil), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}})),
		ReplicaSets: appslisters.NewReplicaSetLister(indexer(t,
			&appsv1.ReplicaSet{ObjectMeta: meta("web-abc", controllerRef("apps/v1", "Deployment", "web")), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}},
			&appsv1.ReplicaSet{ObjectMeta: meta("canary-abc", controllerRef("argoproj.io/v1alpha1", "Rollout", "canary"))},
			&appsv1.ReplicaSet{ObjectMeta: meta("solo", nil), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}})),
		StatefulSets:         appslisters.NewStatefulSetLister(indexer(t, &appsv1.StatefulSet{ObjectMeta: deleting, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](9)}})),
		CloneSets:            kruiselisters.NewCloneSetLister(indexer(t, &appsv1beta1.CloneSet{ObjectMeta: meta("cs", nil), Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](5)}})),
		AdvancedStatefulSets: kruiselisters.NewStatefulSetLister(indexer(t, &appsv1beta1.StatefulSet{ObjectMeta: meta("db", nil)})),
		Scale: func(_ context.Context, namespace string, gk schema.GroupKind, name string) (int32, bool, error) {
			if gk == (schema.GroupKind{Kind: "ReplicationController"}) && name == "rc" && namespace == ns {
				return 4, true, nil
			}
			return 0, false, nil
		},
	}
}

func TestListersReplicas(t *testing.T) {
	l := testListers(t)
	for name, tc := range map[string]struct {
		w     Workload
		n     int32
		found bool
	}{
		"Deployment":                     {w: Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, n: 3, found: true},
		"ReplicaSet":                     {w: Workload{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "solo"}, n: 2, found: true},
		"CloneSet, another version":      {w: Workload{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cs"}, n: 5, found: true},
		"Advanced StatefulSet, no count": {w: Workload{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"}, n: 1, found: true},
		"being deleted: none":            {w: Workload{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "gone"}, found: true},
		"gone: none":                     {w: Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "nope"}, found: true},
		"through scale":                  {w: Workload{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"}, n: 4, found: true},
		"no scale":                       {w: Workload{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "canary"}},
	} {
		t.Run(name, func(t *testing.T) {
			n, found, err := l.Replicas(context.Background(), ns, tc.w)
			require.NoError(t, err)
			assert.Equal(t, tc.found, found)
			assert.Equal(t, tc.n, n)
		})
	}
}

func TestListersControllerOf(t *testing.T) {
	l := testListers(t)
	got, err := l.ControllerOf(context.Background(), ns, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "canary-abc"})
	require.NoError(t, err)
	assert.Equal(t, "Rollout", got.Kind)
	got, err = l.ControllerOf(context.Background(), ns, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "other"})
	require.NoError(t, err)
	assert.Nil(t, got, "another ReplicaSet of the same name")
	got, err = l.ControllerOf(context.Background(), ns, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "nope"})
	require.NoError(t, err)
	assert.Nil(t, got)
	got, err = l.ControllerOf(context.Background(), ns, metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "canary"})
	require.NoError(t, err)
	assert.Nil(t, got, "a kind no lister serves")
}

func TestObserve(t *testing.T) {
	l := testListers(t)
	web := readyPod("w1", ownedBy("apps/v1", "ReplicaSet", "web-abc"))
	web2 := readyPod("w2", ownedBy("apps/v1", "ReplicaSet", "web-abc"))
	canary := readyPod("c1", ownedBy("apps/v1", "ReplicaSet", "canary-abc"))
	bare := readyPod("bare")
	bareDone := readyPod("done", gen.SetPodPhase(corev1.PodSucceeded))
	rc := readyPod("r1", ownedBy("v1", "ReplicationController", "rc"))
	for name, tc := range map[string]struct {
		b      *policyv1alpha1.PodUnavailableBudget
		pods   []*corev1.Pod
		total  int32
		totals map[Workload]int32
	}{
		"target Deployment": {b: target(), pods: []*corev1.Pod{web}, total: 3},
		// Its pods are the garbage collector's to delete: nothing is held (as OpenKruise).
		"target gone":          {b: target(func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.TargetReference.Name = "nope" }), pods: []*corev1.Pod{web, web2}, total: 0},
		"target unknown":       {b: target(gen.SetPUBTarget("argoproj.io/v1alpha1", "Rollout", "canary")), pods: []*corev1.Pod{canary}, total: 1},
		"target through scale": {b: target(gen.SetPUBTarget("v1", "ReplicationController", "rc")), pods: []*corev1.Pod{rc}, total: 4},
		"selector": {b: budget(), pods: []*corev1.Pod{web, web2, canary, bare, bareDone, rc}, total: 3 + 1 + 1 + 0 + 4,
			totals: map[Workload]int32{
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}:              3,
				{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "canary"}: 1, // unknown replicas: its pods
				{APIVersion: "v1", Kind: "Pod", Name: "bare"}:                         1,
				{APIVersion: "v1", Kind: "Pod", Name: "done"}:                         0,
				{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"}:         4,
			}},
		"override": {b: budget(gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: "10"})), pods: []*corev1.Pod{web}, total: 10,
			totals: map[Workload]int32{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}: 3}},
	} {
		t.Run(name, func(t *testing.T) {
			obs, err := Observe(context.Background(), l, l, tc.b, tc.pods)
			require.NoError(t, err)
			assert.Equal(t, tc.total, obs.Total)
			if tc.totals != nil {
				assert.Equal(t, tc.totals, obs.WorkloadTotals)
				assert.Len(t, obs.WorkloadOf, len(tc.pods))
			}
		})
	}
}
