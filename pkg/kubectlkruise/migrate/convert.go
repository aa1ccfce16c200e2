package migrate

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// MigratedFromAnnotation is set on the workload a migration creates,
// naming its source (Kind/name), so that a migration interrupted while
// waiting can be run again and pick up the workload it created.
const MigratedFromAnnotation = "kubectl.kruise.io/migrated-from"

// newMeta is the target's metadata: the source's labels and annotations,
// its own name, and where it came from.
func newMeta(src metav1.ObjectMeta, name, from string) metav1.ObjectMeta {
	annotations := map[string]string{}
	for k, v := range src.Annotations {
		annotations[k] = v
	}
	// These belong to the source alone.
	for _, k := range []string{corev1.LastAppliedConfigAnnotation, "deployment.kubernetes.io/revision", "deprecated.daemonset.template.generation"} {
		delete(annotations, k)
	}
	annotations[MigratedFromAnnotation] = from
	labels := map[string]string{}
	for k, v := range src.Labels {
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: src.Namespace, Labels: labels, Annotations: annotations}
}

// template is the source's pod template as the target's: the built-in
// controllers' own labels are left out (a ReplicaSet adds
// pod-template-hash to its pods, not to the Deployment's template, but a
// template copied from a pod may carry it).
func template(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := *t.DeepCopy()
	delete(out.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(out.Labels, appsv1.ControllerRevisionHashLabelKey)
	return out
}

// cloneSetFrom is the CloneSet that runs a Deployment's pods: same
// selector, template and replicas, and the Deployment's rolling-update
// bounds (a Recreate Deployment's pods are replaced all at once).
func cloneSetFrom(d *appsv1.Deployment, name string) *appsv1beta1.CloneSet {
	cs := &appsv1beta1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "CloneSet"},
		ObjectMeta: newMeta(d.ObjectMeta, name, "Deployment/"+d.Name),
		Spec: appsv1beta1.CloneSetSpec{
			Replicas:                replicas(d.Spec.Replicas),
			Selector:                d.Spec.Selector.DeepCopy(),
			Template:                template(d.Spec.Template),
			MinReadySeconds:         d.Spec.MinReadySeconds,
			RevisionHistoryLimit:    d.Spec.RevisionHistoryLimit,
			ProgressDeadlineSeconds: d.Spec.ProgressDeadlineSeconds,
		},
	}
	rolling := &appsv1beta1.RollingUpdateCloneSetStrategy{
		PodUpdatePolicy: appsv1beta1.CloneSetPodUpdateStrategyType("ReCreate"),
		MaxUnavailable:  ptrIntOrString(intstr.FromString("25%")),
		MaxSurge:        ptrIntOrString(intstr.FromString("25%")),
		Paused:          d.Spec.Paused,
	}
	switch {
	case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		rolling.MaxUnavailable, rolling.MaxSurge = ptrIntOrString(intstr.FromString("100%")), ptrIntOrString(intstr.FromInt32(0))
	case d.Spec.Strategy.RollingUpdate != nil:
		if u := d.Spec.Strategy.RollingUpdate.MaxUnavailable; u != nil {
			rolling.MaxUnavailable = ptrIntOrString(*u)
		}
		if s := d.Spec.Strategy.RollingUpdate.MaxSurge; s != nil {
			rolling.MaxSurge = ptrIntOrString(*s)
		}
	}
	cs.Spec.UpdateStrategy.RollingUpdate = rolling
	return cs
}

// statefulSetFrom is the Advanced StatefulSet that runs a StatefulSet's
// pods under another name (pod names are <set>-<ordinal>, so the two
// sets cannot share one while both run).
func statefulSetFrom(s *appsv1.StatefulSet, name string) *appsv1beta1.StatefulSet {
	asts := &appsv1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: newMeta(s.ObjectMeta, name, "StatefulSet/"+s.Name),
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:             replicas(s.Spec.Replicas),
			Selector:             s.Spec.Selector.DeepCopy(),
			Template:             template(s.Spec.Template),
			ServiceName:          s.Spec.ServiceName,
			PodManagementPolicy:  s.Spec.PodManagementPolicy,
			RevisionHistoryLimit: s.Spec.RevisionHistoryLimit,
			UpdateStrategy:       appsv1beta1.StatefulSetUpdateStrategy{Type: s.Spec.UpdateStrategy.Type},
		},
	}
	for _, c := range s.Spec.VolumeClaimTemplates {
		c := *c.DeepCopy()
		c.Status = corev1.PersistentVolumeClaimStatus{}
		asts.Spec.VolumeClaimTemplates = append(asts.Spec.VolumeClaimTemplates, c)
	}
	if r := s.Spec.UpdateStrategy.RollingUpdate; r != nil {
		asts.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: r.Partition, MaxUnavailable: r.MaxUnavailable}
	}
	if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		asts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1beta1.PersistentVolumeClaimRetentionPolicyType(p.WhenDeleted),
			WhenScaled:  appsv1beta1.PersistentVolumeClaimRetentionPolicyType(p.WhenScaled),
		}
	}
	if o := s.Spec.Ordinals; o != nil {
		asts.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: o.Start}
	}
	return asts
}

// daemonSetFrom is the Advanced DaemonSet that runs a DaemonSet's pods.
func daemonSetFrom(d *appsv1.DaemonSet, name string) *appsv1beta1.DaemonSet {
	ads := &appsv1beta1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: newMeta(d.ObjectMeta, name, "DaemonSet/"+d.Name),
		Spec: appsv1beta1.DaemonSetSpec{
			Selector:             d.Spec.Selector.DeepCopy(),
			Template:             template(d.Spec.Template),
			MinReadySeconds:      d.Spec.MinReadySeconds,
			RevisionHistoryLimit: d.Spec.RevisionHistoryLimit,
			UpdateStrategy:       appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.DaemonSetUpdateStrategyType(d.Spec.UpdateStrategy.Type)},
		},
	}
	if r := d.Spec.UpdateStrategy.RollingUpdate; r != nil {
		ads.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge}
	}
	return ads
}

func replicas(r *int32) *int32 {
	n := int32(1)
	if r != nil {
		n = *r
	}
	return &n
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }
