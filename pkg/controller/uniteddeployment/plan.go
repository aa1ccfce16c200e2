package uniteddeployment

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// change is an existing subset workload to bring to want.
type change struct {
	cur  existing
	want desired
}

// plan lists, in the topology's order, the subsets whose workload must be created and the
// workloads that must be updated: those whose revision, replicas, partition or patch differ
// from what the subset should have (the four things the reference compares, so a steady
// UnitedDeployment writes nothing), or, under reservation, whose maxUnavailable is not the one
// an unschedulable subset needs.
func plan(ud *appsv1alpha1.UnitedDeployment, kept map[string]existing, next, parts map[string]int32, rev string,
	unavailable map[string]int32) (creates []desired, updates []change) {
	for _, s := range ud.Spec.Topology.Subsets {
		want := desired{subset: s.Name, revision: rev, replicas: next[s.Name], partition: parts[s.Name]}
		if mu, ok := unavailable[s.Name]; ok {
			want.maxUnavailable = &mu
		}
		e, ok := kept[s.Name]
		if !ok {
			creates = append(creates, want)
			continue
		}
		wantPartition := want.partition
		if !partitioned(ud) {
			wantPartition = 0
		}
		overridden := want.maxUnavailable != nil && !equalPtr(maxUnavailableOf(e.obj), want.maxUnavailable)
		if e.revision != rev || e.replicas != want.replicas || e.partition != wantPartition || e.patch != string(s.Patch.Raw) || overridden {
			updates = append(updates, change{cur: e, want: want})
		}
	}
	return creates, updates
}

func equalPtr(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// partitioned reports whether ud's subset workloads carry a partition: CloneSets always,
// StatefulSets of either kind under RollingUpdate, Deployments never.
func partitioned(ud *appsv1alpha1.UnitedDeployment) bool {
	t := &ud.Spec.Template
	switch {
	case t.CloneSetTemplate != nil:
		return true
	case t.AdvancedStatefulSetTemplate != nil:
		ty := t.AdvancedStatefulSetTemplate.Spec.UpdateStrategy.Type
		return ty == "" || ty == appsv1.RollingUpdateStatefulSetStrategyType
	case t.StatefulSetTemplate != nil:
		ty := t.StatefulSetTemplate.Spec.UpdateStrategy.Type
		return ty == "" || ty == appsv1.RollingUpdateStatefulSetStrategyType
	}
	return false
}

// applyTo is cur with want's labels and annotations added and its spec (the rendered workload's)
// in place of cur's: the reference re-applies the template onto the workload the same way.
func applyTo(cur, want workload) workload {
	out := cur.DeepCopyObject().(workload)
	labels, annotations := out.GetLabels(), out.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	maps.Copy(annotations, want.GetAnnotations())
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	switch o := out.(type) {
	case *appsv1beta1.CloneSet:
		o.Spec = want.(*appsv1beta1.CloneSet).Spec
	case *appsv1beta1.StatefulSet:
		o.Spec = want.(*appsv1beta1.StatefulSet).Spec
	case *appsv1.StatefulSet:
		o.Spec = want.(*appsv1.StatefulSet).Spec
	case *appsv1.Deployment:
		o.Spec = want.(*appsv1.Deployment).Spec
	}
	return out
}
