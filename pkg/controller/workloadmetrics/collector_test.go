package workloadmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	appslisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/metrictest"
)

func indexer(t *testing.T, objs ...any) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, idx.Add(o))
	}
	return idx
}

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }

func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
func num(n int) *intstr.IntOrString    { v := intstr.FromInt32(int32(n)); return &v }

// fixtures: every kind, partitions as numbers and percentages, paused or
// not, with and without progressDeadlineSeconds.
func listers(t *testing.T) Listers {
	stalled := &appsv1beta1.CloneSet{ObjectMeta: meta("stalled"),
		Spec: appsv1beta1.CloneSetSpec{
			Replicas:                ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
				Partition: pct("99%"), Paused: true,
			}},
		},
		Status: appsv1beta1.CloneSetStatus{Replicas: 10, ReadyReplicas: 9, AvailableReplicas: 8, UpdatedReplicas: 4, UpdatedReadyReplicas: 3,
			Conditions: []appsv1beta1.CloneSetCondition{{Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: corev1.ConditionFalse,
				Reason: string(appsv1beta1.CloneSetProgressDeadlineExceeded)}}},
	}
	progressing := &appsv1beta1.CloneSet{ObjectMeta: meta("progressing"),
		Spec: appsv1beta1.CloneSetSpec{
			Replicas:                ptr.To[int32](5),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
				Partition: num(20), // more than replicas: all of them
			}},
		},
		Status: appsv1beta1.CloneSetStatus{Conditions: []appsv1beta1.CloneSetCondition{
			{Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: corev1.ConditionTrue, Reason: string(appsv1beta1.CloneSetProgressUpdated)}}},
	}
	plain := &appsv1beta1.CloneSet{ObjectMeta: meta("plain")} // replicas default 1, no deadline
	sts := &appsv1beta1.StatefulSet{ObjectMeta: meta("db"),
		Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](5), UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
			RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}}},
		Status: appsv1beta1.StatefulSetStatus{ReadyReplicas: 5, AvailableReplicas: 5, UpdatedReplicas: 2, UpdatedReadyReplicas: 2},
	}
	ds := &appsv1beta1.DaemonSet{ObjectMeta: meta("agent"),
		Spec: appsv1beta1.DaemonSetSpec{UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
			RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Partition: pct("50%"), Paused: ptr.To(true)}}},
		Status: appsv1beta1.DaemonSetStatus{DesiredNumberScheduled: 5, NumberReady: 4, NumberAvailable: 3, UpdatedNumberScheduled: 1},
	}
	ss := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log"},
		Spec:   appsv1beta1.SidecarSetSpec{UpdateStrategy: appsv1beta1.SidecarSetUpdateStrategy{Partition: pct("50%"), Paused: true}},
		Status: appsv1beta1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 1, ReadyPods: 3, UpdatedReadyPods: 1},
	}
	return Listers{
		CloneSets:    appslisters.NewCloneSetLister(indexer(t, stalled, progressing, plain)),
		StatefulSets: appslisters.NewStatefulSetLister(indexer(t, sts)),
		DaemonSets:   appslisters.NewDaemonSetLister(indexer(t, ds)),
		SidecarSets:  appslisters.NewSidecarSetLister(indexer(t, ss)),
	}
}

func TestGauges(t *testing.T) {
	c := New(listers(t))
	c.running.Store(true)

	assert.Equal(t, map[string]float64{
		`{kind="CloneSet",name="stalled",namespace="ns",state="desired"}`:       10,
		`{kind="CloneSet",name="stalled",namespace="ns",state="updated"}`:       4,
		`{kind="CloneSet",name="stalled",namespace="ns",state="ready"}`:         9,
		`{kind="CloneSet",name="stalled",namespace="ns",state="available"}`:     8,
		`{kind="CloneSet",name="stalled",namespace="ns",state="updated_ready"}`: 3,

		`{kind="CloneSet",name="progressing",namespace="ns",state="desired"}`:       5,
		`{kind="CloneSet",name="progressing",namespace="ns",state="updated"}`:       0,
		`{kind="CloneSet",name="progressing",namespace="ns",state="ready"}`:         0,
		`{kind="CloneSet",name="progressing",namespace="ns",state="available"}`:     0,
		`{kind="CloneSet",name="progressing",namespace="ns",state="updated_ready"}`: 0,

		`{kind="CloneSet",name="plain",namespace="ns",state="desired"}`:       1,
		`{kind="CloneSet",name="plain",namespace="ns",state="updated"}`:       0,
		`{kind="CloneSet",name="plain",namespace="ns",state="ready"}`:         0,
		`{kind="CloneSet",name="plain",namespace="ns",state="available"}`:     0,
		`{kind="CloneSet",name="plain",namespace="ns",state="updated_ready"}`: 0,

		`{kind="StatefulSet",name="db",namespace="ns",state="desired"}`:       5,
		`{kind="StatefulSet",name="db",namespace="ns",state="updated"}`:       2,
		`{kind="StatefulSet",name="db",namespace="ns",state="ready"}`:         5,
		`{kind="StatefulSet",name="db",namespace="ns",state="available"}`:     5,
		`{kind="StatefulSet",name="db",namespace="ns",state="updated_ready"}`: 2,

		// A DaemonSet's status has no updated-and-ready count.
		`{kind="DaemonSet",name="agent",namespace="ns",state="desired"}`:   5,
		`{kind="DaemonSet",name="agent",namespace="ns",state="updated"}`:   1,
		`{kind="DaemonSet",name="agent",namespace="ns",state="ready"}`:     4,
		`{kind="DaemonSet",name="agent",namespace="ns",state="available"}`: 3,

		`{kind="SidecarSet",name="log",namespace="",state="desired"}`:       3,
		`{kind="SidecarSet",name="log",namespace="",state="updated"}`:       1,
		`{kind="SidecarSet",name="log",namespace="",state="ready"}`:         3,
		`{kind="SidecarSet",name="log",namespace="",state="available"}`:     3,
		`{kind="SidecarSet",name="log",namespace="",state="updated_ready"}`: 1,
	}, metrictest.Series(t, "kruise_workload_replicas", c))

	assert.Equal(t, map[string]float64{
		`{kind="CloneSet",name="stalled",namespace="ns"}`:     1,
		`{kind="CloneSet",name="progressing",namespace="ns"}`: 0,
		`{kind="CloneSet",name="plain",namespace="ns"}`:       0,
		`{kind="StatefulSet",name="db",namespace="ns"}`:       0,
		`{kind="DaemonSet",name="agent",namespace="ns"}`:      1,
		`{kind="SidecarSet",name="log",namespace=""}`:         1,
	}, metrictest.Series(t, "kruise_workload_paused", c))

	assert.Equal(t, map[string]float64{
		`{kind="CloneSet",name="stalled",namespace="ns"}`:     9, // 99% of 10 rounds up to 10, capped at replicas-1
		`{kind="CloneSet",name="progressing",namespace="ns"}`: 5, // 20, at most replicas
		`{kind="CloneSet",name="plain",namespace="ns"}`:       0,
		`{kind="StatefulSet",name="db",namespace="ns"}`:       3,
		`{kind="DaemonSet",name="agent",namespace="ns"}`:      2, // 50% of 5 nodes, rounded down
		`{kind="SidecarSet",name="log",namespace=""}`:         2, // 50% of 3 matched pods, rounded up
	}, metrictest.Series(t, "kruise_workload_partition", c))

	assert.Equal(t, map[string]float64{
		`{kind="CloneSet",name="stalled",namespace="ns"}`:     1,
		`{kind="CloneSet",name="progressing",namespace="ns"}`: 0,
	}, metrictest.Series(t, "kruise_workload_progress_deadline_exceeded", c), "only workloads with progressDeadlineSeconds")
}

// Nothing before Run (a standby, or caches not synced yet) and nothing
// after it returns (leadership lost).
func TestSilentUnlessRunning(t *testing.T) {
	c := New(listers(t))
	names := []string{"kruise_workload_replicas", "kruise_workload_paused", "kruise_workload_partition", "kruise_workload_progress_deadline_exceeded"}
	for _, n := range names {
		assert.Empty(t, metrictest.Series(t, n, c), n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()
	require.Eventually(t, c.running.Load, timeout, tick)
	assert.NotEmpty(t, metrictest.Series(t, "kruise_workload_replicas", c))

	cancel()
	require.NoError(t, <-done)
	for _, n := range names {
		assert.Empty(t, metrictest.Series(t, n, c), n)
	}
}

// Missing listers are skipped.
func TestNoListers(t *testing.T) {
	c := New(Listers{})
	c.running.Store(true)
	assert.Empty(t, metrictest.Series(t, "kruise_workload_replicas", c))
}

const (
	timeout = 5 * time.Second
	tick    = time.Millisecond
)
