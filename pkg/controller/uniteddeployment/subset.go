package uniteddeployment

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// existing is one subset workload as the caches show it.
type existing struct {
	obj       workload
	kind      kind
	subset    string
	revision  string
	patch     string
	selector  *metav1.LabelSelector
	replicas  int32
	partition int32
	// status replicas and Ready replicas, as the workload reports them.
	statusReplicas, ready int32
	pods                  []*corev1.Pod
}

// describe reads a subset workload; false for an object of no subset kind.
func describe(obj workload) (existing, bool) {
	e := existing{obj: obj}
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	e.subset, e.revision, e.patch = labels[appsv1alpha1.SubSetNameLabelKey], labels[RevisionLabel], annotations[appsv1alpha1.SubsetPatchAnnotation]
	switch o := obj.(type) {
	case *appsv1beta1.CloneSet:
		e.kind, e.selector = kindCloneSet, o.Spec.Selector
		e.replicas = deref(o.Spec.Replicas, 1)
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			p, _ := intstr.GetScaledValueFromIntOrPercent(ru.Partition, int(e.replicas), true)
			e.partition = int32(p)
		}
		e.statusReplicas, e.ready = o.Status.Replicas, o.Status.ReadyReplicas
	case *appsv1beta1.StatefulSet:
		e.kind, e.selector = kindAdvancedStatefulSet, o.Spec.Selector
		e.replicas = deref(o.Spec.Replicas, 1)
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			e.partition = deref(ru.Partition, 0)
		}
		e.statusReplicas, e.ready = o.Status.Replicas, o.Status.ReadyReplicas
	case *appsv1.StatefulSet:
		e.kind, e.selector = kindStatefulSet, o.Spec.Selector
		e.replicas = deref(o.Spec.Replicas, 1)
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			e.partition = deref(ru.Partition, 0)
		}
		e.statusReplicas, e.ready = o.Status.Replicas, o.Status.ReadyReplicas
	case *appsv1.Deployment:
		e.kind, e.selector = kindDeployment, o.Spec.Selector
		e.replicas = deref(o.Spec.Replicas, 1)
		e.statusReplicas, e.ready = o.Status.Replicas, o.Status.ReadyReplicas
	default:
		return e, false
	}
	return e, true
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// failure is a subset workload's own report of a failure (a StatefulSet or Deployment that
// could not create pods), or "".
func (e *existing) failure() string {
	switch o := e.obj.(type) {
	case *appsv1.Deployment:
		for _, c := range o.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
				return c.Message
			}
		}
	case *appsv1.StatefulSet:
		for _, c := range o.Status.Conditions {
			if c.Status == corev1.ConditionTrue && c.Type == "ReplicaFailure" {
				return c.Message
			}
		}
	}
	return ""
}

// sorting keeps the oldest of duplicates: by creation time, then name.
func older(a, b existing) int {
	if c := a.obj.GetCreationTimestamp().Time.Compare(b.obj.GetCreationTimestamp().Time); c != 0 {
		return c
	}
	return cmp.Compare(a.obj.GetName(), b.obj.GetName())
}

// classification is what reconciling the subset workloads of a UnitedDeployment must do before
// it scales and updates them.
type classification struct {
	// kept is the one workload of each subset of the topology.
	kept map[string]existing
	// stale are the workloads to delete: of another kind than the template's, without a subset
	// name, of a subset no longer in the topology (removed or renamed), duplicates, and those
	// whose selector differs from the one the subset needs (selectors are immutable: the
	// reference recreates).
	stale []existing
}

// classify sorts the workloads ud controls into the kept and the stale (see classification).
func classify(ud *appsv1alpha1.UnitedDeployment, k kind, all []existing) classification {
	c := classification{kept: map[string]existing{}}
	in := map[string]bool{}
	for _, s := range ud.Spec.Topology.Subsets {
		in[s.Name] = true
	}
	all = slices.Clone(all)
	slices.SortFunc(all, older)
	for _, e := range all {
		if e.kind != k || e.subset == "" || !in[e.subset] || !selectorFits(ud, e) {
			c.stale = append(c.stale, e)
			continue
		}
		if _, dup := c.kept[e.subset]; dup {
			c.stale = append(c.stale, e)
			continue
		}
		c.kept[e.subset] = e
	}
	return c
}

// selectorFits reports whether e's selector is the one its subset's workload is made with.
func selectorFits(ud *appsv1alpha1.UnitedDeployment, e existing) bool {
	want := ud.Spec.Selector.DeepCopy()
	if want == nil {
		want = &metav1.LabelSelector{}
	}
	if want.MatchLabels == nil {
		want.MatchLabels = map[string]string{}
	}
	want.MatchLabels[appsv1alpha1.SubSetNameLabelKey] = e.subset
	return equality.Semantic.DeepEqual(want, e.selector)
}
