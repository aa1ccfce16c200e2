// Package workloadmetrics exports the rollout state of kruise's workloads
// (CloneSets, Advanced StatefulSets and DaemonSets, SidecarSets) as gauges
// read from the informers' caches at scrape time. It keeps no state: a
// series exists while its object does. It runs as a controller, so that it
// speaks only while this replica leads and the caches have synced; a
// standby exports none of its series.
package workloadmetrics

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	appslisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/partition"
)

// Name is the controller's name in logs.
const Name = "workloadmetrics"

// Values of the kind label.
const (
	KindCloneSet    = "CloneSet"
	KindStatefulSet = "StatefulSet" // Advanced StatefulSet, apps.kruise.io
	KindDaemonSet   = "DaemonSet"   // Advanced DaemonSet, apps.kruise.io
	KindSidecarSet  = "SidecarSet"
)

// Values of the state label of kruise_workload_replicas.
const (
	StateDesired      = "desired"
	StateUpdated      = "updated"
	StateReady        = "ready"
	StateAvailable    = "available"
	StateUpdatedReady = "updated_ready"
)

var (
	objectLabels = []string{"kind", "namespace", "name"}

	replicasDesc = prometheus.NewDesc("kruise_workload_replicas",
		"Pods of a kruise workload by state: desired, updated (of the update revision), ready, available, updated_ready. "+
			"DaemonSets count nodes and have no updated_ready; SidecarSets count the pods they were injected into "+
			"(desired: matched, available: ready). Emitted by the leader only.",
		append(objectLabels, "state"), nil)
	pausedDesc = prometheus.NewDesc("kruise_workload_paused",
		"1 when the workload's update strategy is paused, else 0. Emitted by the leader only.", objectLabels, nil)
	partitionDesc = prometheus.NewDesc("kruise_workload_partition",
		"Pods (DaemonSet: nodes) the partition keeps on the old revision, percentages resolved, at most the desired count; 0 when unset. "+
			"Emitted by the leader only.", objectLabels, nil)
	deadlineDesc = prometheus.NewDesc("kruise_workload_progress_deadline_exceeded",
		"1 when the workload's Progressing condition is False with reason ProgressDeadlineExceeded, else 0; "+
			"only for workloads with progressDeadlineSeconds (CloneSets). Emitted by the leader only.", objectLabels, nil)
)

// Listers are the caches the collector reads; nil ones are skipped.
type Listers struct {
	CloneSets    appslisters.CloneSetLister
	StatefulSets appslisters.StatefulSetLister
	DaemonSets   appslisters.DaemonSetLister
	SidecarSets  appslisters.SidecarSetLister
}

// Collector is the workload gauges' collector and the controller that
// switches it on while it runs.
type Collector struct {
	listers Listers
	running atomic.Bool
}

// New returns a Collector over l; it says nothing until Run.
func New(l Listers) *Collector { return &Collector{listers: l} }

// Name implements the controller interface.
func (c *Collector) Name() string { return Name }

// Run lets the collector speak until ctx ends. Caches are synced before it
// is called; it has no workers.
func (c *Collector) Run(ctx context.Context, _ int) error {
	c.running.Store(true)
	defer c.running.Store(false)
	klog.FromContext(ctx).Info("Exporting workload metrics")
	<-ctx.Done()
	return nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{replicasDesc, pausedDesc, partitionDesc, deadlineDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if !c.running.Load() {
		return
	}
	var ws []workload
	if l := c.listers.CloneSets; l != nil {
		if list, err := l.List(labels.Everything()); err == nil {
			for _, o := range list {
				ws = append(ws, cloneSet(o))
			}
		}
	}
	if l := c.listers.StatefulSets; l != nil {
		if list, err := l.List(labels.Everything()); err == nil {
			for _, o := range list {
				ws = append(ws, statefulSet(o))
			}
		}
	}
	if l := c.listers.DaemonSets; l != nil {
		if list, err := l.List(labels.Everything()); err == nil {
			for _, o := range list {
				ws = append(ws, daemonSet(o))
			}
		}
	}
	if l := c.listers.SidecarSets; l != nil {
		if list, err := l.List(labels.Everything()); err == nil {
			for _, o := range list {
				ws = append(ws, sidecarSet(o))
			}
		}
	}
	for _, w := range ws {
		w.emit(ch)
	}
}

// workload is what the gauges say of one object.
type workload struct {
	kind, namespace, name string
	// replicas by state; a state left out has no series.
	replicas  map[string]int32
	paused    bool
	partition int
	// deadline is nil without progressDeadlineSeconds: no series.
	deadlineExceeded *bool
}

func (w workload) emit(ch chan<- prometheus.Metric) {
	for state, n := range w.replicas {
		ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, float64(n), w.kind, w.namespace, w.name, state)
	}
	ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, boolValue(w.paused), w.kind, w.namespace, w.name)
	ch <- prometheus.MustNewConstMetric(partitionDesc, prometheus.GaugeValue, float64(w.partition), w.kind, w.namespace, w.name)
	if w.deadlineExceeded != nil {
		ch <- prometheus.MustNewConstMetric(deadlineDesc, prometheus.GaugeValue, boolValue(*w.deadlineExceeded), w.kind, w.namespace, w.name)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func cloneSet(o *appsv1beta1.CloneSet) workload {
	desired := replicasOf(o.Spec.Replicas)
	w := workload{kind: KindCloneSet, namespace: o.Namespace, name: o.Name, replicas: map[string]int32{
		StateDesired:      desired,
		StateUpdated:      o.Status.UpdatedReplicas,
		StateReady:        o.Status.ReadyReplicas,
		StateAvailable:    o.Status.AvailableReplicas,
		StateUpdatedReady: o.Status.UpdatedReadyReplicas,
	}}
	if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		w.paused = ru.Paused
		// As the CloneSet controller resolves it (unparsable is 0, as in scaled).
		w.partition, _ = partition.Count(ru.Partition, int(desired))
	}
	if o.Spec.ProgressDeadlineSeconds != nil {
		exceeded := false
		for _, c := range o.Status.Conditions {
			if c.Type == appsv1beta1.CloneSetConditionTypeProgressing && c.Status == corev1.ConditionFalse &&
				c.Reason == string(appsv1beta1.CloneSetProgressDeadlineExceeded) {
				exceeded = true
			}
		}
		w.deadlineExceeded = &exceeded
	}
	return w
}

func statefulSet(o *appsv1beta1.StatefulSet) workload {
	desired := replicasOf(o.Spec.Replicas)
	w := workload{kind: KindStatefulSet, namespace: o.Namespace, name: o.Name, replicas: map[string]int32{
		StateDesired:      desired,
		StateUpdated:      o.Status.UpdatedReplicas,
		StateReady:        o.Status.ReadyReplicas,
		StateAvailable:    o.Status.AvailableReplicas,
		StateUpdatedReady: o.Status.UpdatedReadyReplicas,
	}}
	if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		w.paused = ru.Paused
		// A count of pods, as upstream's ordinal partition.
		if ru.Partition != nil {
			w.partition = min(max(int(*ru.Partition), 0), int(desired))
		}
	}
	return w
}

func daemonSet(o *appsv1beta1.DaemonSet) workload {
	desired := o.Status.DesiredNumberScheduled
	w := workload{kind: KindDaemonSet, namespace: o.Namespace, name: o.Name, replicas: map[string]int32{
		StateDesired:   desired,
		StateUpdated:   o.Status.UpdatedNumberScheduled,
		StateReady:     o.Status.NumberReady,
		StateAvailable: o.Status.NumberAvailable,
	}}
	if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		w.paused = ru.Paused != nil && *ru.Paused
		// As the DaemonSet controller resolves it: a percentage of the desired nodes rounded down.
		w.partition = scaled(ru.Partition, int(desired), false)
	}
	return w
}

func sidecarSet(o *appsv1beta1.SidecarSet) workload {
	matched := o.Status.MatchedPods
	return workload{kind: KindSidecarSet, namespace: o.Namespace, name: o.Name, replicas: map[string]int32{
		StateDesired:      matched,
		StateUpdated:      o.Status.UpdatedPods,
		StateReady:        o.Status.ReadyPods,
		StateAvailable:    o.Status.ReadyPods,
		StateUpdatedReady: o.Status.UpdatedReadyPods,
	},
		paused: o.Spec.UpdateStrategy.Paused,
		// As the SidecarSet controller resolves it: a percentage of the matched pods rounded up.
		partition: scaled(o.Spec.UpdateStrategy.Partition, int(matched), true),
	}
}

// replicasOf is spec.replicas, 1 when unset (the API's default).
func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// scaled resolves a number-or-percent partition against total, clamped to
// [0, total]; unset or unparsable is 0 (the controllers refuse the latter).
func scaled(v *intstr.IntOrString, total int, roundUp bool) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)
	if err != nil {
		return 0
	}
	return min(max(n, 0), max(total, 0))
}
