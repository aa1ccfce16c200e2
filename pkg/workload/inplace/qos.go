package inplace

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// qosResources are the resources that decide a pod's QoS class.
var qosResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// qosClass is the QoS class the API server gives a pod of this spec, by the documented rules:
// BestEffort without any cpu or memory request or limit; Guaranteed when every container limits
// both cpu and memory and every request equals its limit; Burstable otherwise. Pod-level
// resources, when set, decide alone. A limit without a request counts as a request of the same
// amount, as the API server defaults it on a pod (templates are not defaulted).
// (k8s.io/component-helpers is not a dependency of this module, hence the few lines here.)
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	if spec.Resources != nil && hasQoSResource(*spec.Resources) {
		return classOf([]corev1.ResourceRequirements{*spec.Resources})
	}
	var all []corev1.ResourceRequirements
	for i := range spec.InitContainers {
		all = append(all, spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		all = append(all, spec.Containers[i].Resources)
	}
	return classOf(all)
}

func classOf(rs []corev1.ResourceRequirements) corev1.PodQOSClass {
	anySet, guaranteed := false, true
	for _, r := range rs {
		for _, name := range qosResources {
			req, hasReq := positive(r.Requests, name)
			lim, hasLim := positive(r.Limits, name)
			if hasLim && !hasReq {
				req, hasReq = lim, true
			}
			anySet = anySet || hasReq || hasLim
			if !hasLim || req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

func hasQoSResource(r corev1.ResourceRequirements) bool {
	for _, name := range qosResources {
		if _, ok := positive(r.Requests, name); ok {
			return true
		}
		if _, ok := positive(r.Limits, name); ok {
			return true
		}
	}
	return false
}

// positive returns the amount of name in l when it is above zero; a zero amount counts as unset.
func positive(l corev1.ResourceList, name corev1.ResourceName) (resource.Quantity, bool) {
	q, ok := l[name]
	if !ok || q.Sign() <= 0 {
		return resource.Quantity{}, false
	}
	return q, true
}
