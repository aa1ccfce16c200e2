package spread

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func TestAssign(t *testing.T) {
	ign := VersionIgnored
	for _, tc := range []struct {
		name     string
		ws       *appsv1alpha1.WorkloadSpread
		status   map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus
		overall  []appsv1alpha1.WorkloadSpreadSubsetStatus
		pod      *corev1.Pod
		total    int32
		want     string
		changed  bool
		overflow bool
		key      string
		after    map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus
	}{
		{
			name: "single subset without max: no status write",
			ws:   cloneSetWS(sub("a", nil)), pod: podNamed("p", nil), total: 5,
			want: "a",
		},
		{
			name: "no status yet: percent rounding via MaxReplicas initialises the list",
			ws:   cloneSetWS(sub("a", pct("34%")), sub("b", pct("33%")), sub("c", pct("33%"))), pod: podNamed("p", nil), total: 10,
			want: "a", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 3, "p"), entry("b", 0, 4), entry("c", 0, 4)}},
		},
		{
			name:   "workload scaled since the last count: room recounted at the new replicas (6 -> 9)",
			ws:     cloneSetWS(sub("a", pct("34%")), sub("b", pct("33%")), sub("c", pct("33%"))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 3, 0), entry("b", 2, 0), entry("c", 1, 1)}},
			pod:    podNamed("p", nil), total: 9, want: "a", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 3, 0, "p"), entry("b", 2, 1), entry("c", 1, 2)}},
		},
		{
			name:   "first subset full: next with room",
			ws:     cloneSetWS(sub("a", cnt(2)), sub("b", nil)),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 2, 0), entry("b", 3, -1)}},
			pod:    podNamed("p", nil), total: 5, want: "b",
		},
		{
			name: "nil maxReplicas subset takes the pod without a status write",
			ws:   cloneSetWS(sub("a", cnt(0)), sub("b", nil)),
			pod:  podNamed("p", nil), total: 5, want: "b",
			// the list of the new version is still initialised and stored
			changed: false,
		},
		{
			name:   "generateName pod gets a generated key",
			ws:     cloneSetWS(sub("a", cnt(2)), sub("b", nil)),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 2), entry("b", 0, -1)}},
			pod:    podNamed("", nil), want: "a", changed: true, key: "k1",
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 1, "k1"), entry("b", 0, -1)}},
		},
		{
			name:   "pod already recorded keeps its subset",
			ws:     cloneSetWS(sub("a", cnt(2)), sub("b", cnt(2))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 2), entry("b", 0, 1, "p")}},
			pod:    podNamed("p", nil), want: "b",
		},
		{
			name:    "Schedulable=False subset skipped (overall status)",
			ws:      cloneSetWS(sub("a", cnt(2)), sub("b", nil)),
			status:  map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 2), entry("b", 0, -1)}},
			overall: []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Conditions: unschedulableCond()}},
			pod:     podNamed("p", nil), want: "b",
		},
		{
			name: "Schedulable=False subset skipped (versioned status)",
			ws:   cloneSetWS(sub("a", cnt(2)), sub("b", cnt(3))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {
				{Name: "a", MissingReplicas: 2, Conditions: unschedulableCond()}, entry("b", 0, 3)}},
			pod: podNamed("p", nil), want: "b", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {
				{Name: "a", MissingReplicas: 2, Conditions: unschedulableCond()}, entry("b", 0, 2, "p")}},
		},
		{
			name:   "no subset with room: lowest fill, recorded without going negative",
			ws:     cloneSetWS(sub("a", cnt(2)), sub("b", cnt(4))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 3, 0), entry("b", 4, 0)}},
			pod:    podNamed("p", nil), total: 6, want: "b", changed: true, overflow: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 3, 0), entry("b", 4, 0, "p")}},
		},
		{
			name:   "no subset with room: equal fill goes to the earlier",
			ws:     cloneSetWS(sub("a", cnt(2)), sub("b", cnt(4))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 2, 0), entry("b", 4, 0)}},
			pod:    podNamed("p", nil), want: "a", changed: true, overflow: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 2, 0, "p"), entry("b", 4, 0)}},
		},
		{
			name: "no subset with room: unschedulable and size-0 subsets lose",
			ws:   cloneSetWS(sub("a", cnt(1)), sub("b", cnt(0)), sub("c", cnt(1))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {
				{Name: "a", MissingReplicas: 1, Conditions: unschedulableCond()}, entry("b", 0, 0), entry("c", 5, 0)}},
			pod: podNamed("p", nil), want: "c", changed: true, overflow: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {
				{Name: "a", MissingReplicas: 1, Conditions: unschedulableCond()}, entry("b", 0, 0), entry("c", 5, 0, "p")}},
		},
		{
			name:   "subsets reordered: entries matched by name",
			ws:     cloneSetWS(sub("b", cnt(2)), sub("a", cnt(2))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 2), entry("b", 2, 0)}},
			pod:    podNamed("p", nil), want: "a", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 0, 1, "p"), entry("b", 2, 0)}},
		},
		{
			name:   "subset removed and one added: the new one initialised from maxReplicas",
			ws:     cloneSetWS(sub("b", cnt(1)), sub("c", cnt(3))),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 2, 0), entry("b", 1, 0)}},
			pod:    podNamed("p", nil), want: "c", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{ign: {entry("a", 2, 0), entry("b", 1, 0), entry("c", 0, 2, "p")}},
		},
		{
			name:   "surge: a new Deployment version gets its own list from maxReplicas",
			ws:     wsFor("apps/v1", "Deployment", sub("a", cnt(2)), sub("b", nil)),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{"old": {entry("a", 2, 0), entry("b", 3, -1)}},
			pod:    podNamed("p", map[string]string{"pod-template-hash": "new"}), want: "a", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{
				"old": {entry("a", 2, 0), entry("b", 3, -1)},
				"new": {entry("a", 0, 1, "p"), entry("b", 0, -1)}},
		},
		{
			name:   "surge: CloneSet pods keyed by the revision hash",
			ws:     cloneSetWS(sub("a", cnt(1)), sub("b", nil)),
			status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{"h1": {entry("a", 1, 0), entry("b", 0, -1)}},
			pod:    podNamed("p", map[string]string{"controller-revision-hash": "app-h2"}), want: "a", changed: true,
			after: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{
				"h1": {entry("a", 1, 0), entry("b", 0, -1)},
				"h2": {entry("a", 0, 0, "p"), entry("b", 0, -1)}},
		},
		{
			name: "StatefulSet by ordinal over cumulative maxReplicas, no status write",
			ws:   wsFor("apps/v1", "StatefulSet", sub("a", cnt(2)), sub("b", cnt(3)), sub("c", nil)),
			pod:  podNamed("app-4", nil), want: "b",
		},
		{
			name: "StatefulSet ordinal beyond the limited subsets",
			ws:   wsFor("apps.kruise.io/v1beta1", "StatefulSet", sub("a", cnt(2)), sub("b", nil)),
			pod:  podNamed("app-40", nil), want: "b",
		},
		{
			name:    "StatefulSet skips an unschedulable subset",
			ws:      wsFor("apps/v1", "StatefulSet", sub("a", cnt(2)), sub("b", cnt(3)), sub("c", nil)),
			overall: []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Conditions: unschedulableCond()}},
			pod:     podNamed("app-1", nil), want: "b",
		},
		{
			name: "StatefulSet ordinal beyond all limits goes to the last subset",
			ws:   wsFor("apps/v1", "StatefulSet", sub("a", cnt(1)), sub("b", cnt(1))),
			pod:  podNamed("app-9", nil), want: "b",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := tc.ws.DeepCopy()
			ws.Status.VersionedSubsetStatuses = tc.status
			ws.Status.SubsetStatuses = tc.overall
			p, err := Assign(ws, tc.pod, tc.total, t0, keys())
			require.NoError(t, err)
			require.NotNil(t, p.Subset)
			assert.Equal(t, tc.want, p.Subset.Name)
			assert.Equal(t, tc.changed, p.StatusChanged)
			assert.Equal(t, tc.overflow, p.Overflow)
			assert.Equal(t, tc.key, p.Key)
			if tc.after != nil {
				assert.Equal(t, tc.after, ws.Status.VersionedSubsetStatuses)
			}
		})
	}
}

// Two admissions that read the same status never both take the last place: the second, on the
// status the first wrote, goes elsewhere; and the first's write makes the second's stale copy
// conflict, which the webhook retries on the fresh one.
func TestAssignConcurrentCreatesNeverOverfill(t *testing.T) {
	base := cloneSetWS(sub("a", cnt(1)), sub("b", cnt(5)))
	base.Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{VersionIgnored: {entry("a", 0, 1), entry("b", 0, 5)}}

	first, second := base.DeepCopy(), base.DeepCopy()
	p1, err := Assign(first, podNamed("p1", nil), 6, t0, keys())
	require.NoError(t, err)
	p2, err := Assign(second, podNamed("p2", nil), 6, t0, keys())
	require.NoError(t, err)
	// Both chose "a" on the same read; only one write can succeed on that resourceVersion.
	assert.Equal(t, "a", p1.Subset.Name)
	assert.Equal(t, "a", p2.Subset.Name)

	// The loser retries on the winner's status.
	retry := first.DeepCopy()
	p2, err = Assign(retry, podNamed("p2", nil), 6, t0, keys())
	require.NoError(t, err)
	assert.Equal(t, "b", p2.Subset.Name)
	got := retry.Status.VersionedSubsetStatuses[VersionIgnored]
	assert.Equal(t, []appsv1alpha1.WorkloadSpreadSubsetStatus{entry("a", 0, 0, "p1"), entry("b", 0, 4, "p2")}, got)

	// Many sequential admissions on the written status fill a then b exactly, then overflow by fill.
	ws := base.DeepCopy()
	counts := map[string]int{}
	for i := 0; i < 8; i++ {
		p, err := Assign(ws, podNamed(string(rune('a'+i))+"-pod", nil), 6, t0, keys())
		require.NoError(t, err)
		counts[p.Subset.Name]++
	}
	assert.Equal(t, map[string]int{"a": 2, "b": 6}, counts, "a takes 1, b 5; two overflow pods go to the least filled (a 1/1 = b 5/5 -> a, then b 5/5 < a 2/1)")
}

func TestAssignNoSubsets(t *testing.T) {
	p, err := Assign(cloneSetWS(), podNamed("p", nil), 1, t0, keys())
	require.NoError(t, err)
	assert.Nil(t, p.Subset)
}

func TestRelease(t *testing.T) {
	m := &appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: "a"}
	t.Run("records deleting and frees a place", func(t *testing.T) {
		ws := cloneSetWS(sub("a", cnt(2)))
		ws.Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{VersionIgnored: {entry("a", 2, 0)}}
		require.True(t, Release(ws, podNamed("p", nil), m, t0))
		e := ws.Status.VersionedSubsetStatuses[VersionIgnored][0]
		assert.Equal(t, int32(1), e.MissingReplicas)
		assert.Equal(t, map[string]metav1.Time{"p": metav1.NewTime(t0)}, e.DeletingPods)
		assert.False(t, Release(ws, podNamed("p", nil), m, t0), "a second delete of the same pod changes nothing")
	})
	for _, tc := range []struct {
		name   string
		status map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus
	}{
		{name: "unlimited subset", status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{VersionIgnored: {entry("a", 2, -1)}}},
		{name: "no entry for the version", status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{"other": {entry("a", 2, 0)}}},
		{name: "no entry for the subset", status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{VersionIgnored: {entry("b", 2, 0)}}},
		{name: "pod still being created", status: map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{VersionIgnored: {entry("a", 2, 0, "p")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := cloneSetWS(sub("a", cnt(2)))
			ws.Status.VersionedSubsetStatuses = tc.status
			before := ws.DeepCopy()
			assert.False(t, Release(ws, podNamed("p", nil), m, t0))
			assert.Equal(t, before, ws)
		})
	}
}
