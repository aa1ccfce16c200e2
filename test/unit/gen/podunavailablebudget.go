package gen

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// PUBModifier changes a PodUnavailableBudget.
type PUBModifier func(*policyv1alpha1.PodUnavailableBudget)

// PUB is a PodUnavailableBudget named name, changed by mods in order.
func PUB(name string, mods ...PUBModifier) *policyv1alpha1.PodUnavailableBudget {
	return apply(&policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// PUBFrom is a copy of b changed by mods; b is left as it was.
func PUBFrom(b *policyv1alpha1.PodUnavailableBudget, mods ...PUBModifier) *policyv1alpha1.PodUnavailableBudget {
	return apply(b.DeepCopy(), mods)
}

// SetPUBNamespace sets the namespace.
func SetPUBNamespace(ns string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Namespace = ns }
}

// SetPUBGeneration sets metadata.generation.
func SetPUBGeneration(g int64) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Generation = g }
}

// SetPUBResourceVersion sets metadata.resourceVersion.
func SetPUBResourceVersion(rv string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.ResourceVersion = rv }
}

// AddPUBAnnotations adds annotations, replacing values of the same keys.
func AddPUBAnnotations(annotations map[string]string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			b.Annotations[k] = v
		}
	}
}

// SetPUBSelector selects pods by matchLabels.
func SetPUBSelector(matchLabels map[string]string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		b.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// SetPUBTarget targets a workload.
func SetPUBTarget(apiVersion, kind, name string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		b.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
}

// SetPUBMaxUnavailable sets spec.maxUnavailable: "30%" or "2" (a count).
func SetPUBMaxUnavailable(v string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable = intOrPercent(v) }
}

// SetPUBMinAvailable sets spec.minAvailable: "30%" or "2" (a count).
func SetPUBMinAvailable(v string) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MinAvailable = intOrPercent(v) }
}

// SetPUBStatus sets the status.
func SetPUBStatus(st policyv1alpha1.PodUnavailableBudgetStatus) PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) { b.Status = *st.DeepCopy() }
}

// intOrPercent is a count when v parses as one, else the string (a percentage).
func intOrPercent(v string) *intstr.IntOrString {
	x := intstr.Parse(v)
	return &x
}
