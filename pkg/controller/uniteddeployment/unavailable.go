package uniteddeployment

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// unavailable is, under reserveUnschedulablePods, the maxUnavailable each unschedulable subset's
// workload must have so that an update can replace its pods that will never be Ready: its
// replicas minus its Ready pods, plus the old pods the update timed out on (the reference's
// rule). Other subsets keep the template's.
func unavailable(ud *appsv1alpha1.UnitedDeployment, kept map[string]existing, obs map[string]observed) map[string]int32 {
	if !ud.Spec.Topology.ScheduleStrategy.ShouldReserveUnschedulablePods() {
		return nil
	}
	out := map[string]int32{}
	for name, o := range obs {
		if e, ok := kept[name]; ok && o.unschedulable {
			out[name] = e.replicas - e.ready + o.timeouts
		}
	}
	return out
}

// setMaxUnavailable writes v (when set) into a workload's rolling update.
func setMaxUnavailable(w workload, v *int32) {
	if v == nil {
		return
	}
	mu := intstr.FromInt32(*v)
	switch o := w.(type) {
	case *appsv1beta1.CloneSet:
		if o.Spec.UpdateStrategy.RollingUpdate == nil {
			o.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
		}
		o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &mu
	case *appsv1beta1.StatefulSet:
		if o.Spec.UpdateStrategy.RollingUpdate == nil {
			o.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &mu
	case *appsv1.StatefulSet:
		if o.Spec.UpdateStrategy.RollingUpdate == nil {
			o.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &mu
	case *appsv1.Deployment:
		if o.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			return
		}
		if o.Spec.Strategy.RollingUpdate == nil {
			o.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		o.Spec.Strategy.RollingUpdate.MaxUnavailable = &mu
	}
}

// maxUnavailableOf is a workload's maxUnavailable when it is a number, else nil.
func maxUnavailableOf(w workload) *int32 {
	var v *intstr.IntOrString
	switch o := w.(type) {
	case *appsv1beta1.CloneSet:
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			v = ru.MaxUnavailable
		}
	case *appsv1beta1.StatefulSet:
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			v = ru.MaxUnavailable
		}
	case *appsv1.StatefulSet:
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			v = ru.MaxUnavailable
		}
	case *appsv1.Deployment:
		if ru := o.Spec.Strategy.RollingUpdate; ru != nil {
			v = ru.MaxUnavailable
		}
	}
	if v == nil || v.Type != intstr.Int {
		return nil
	}
	n := v.IntVal
	return &n
}
