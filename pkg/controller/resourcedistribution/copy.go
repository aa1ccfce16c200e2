package resourcedistribution

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// desiredCopy is the object the namespace should hold: the source, in namespace, owned by rd,
// with the hash and source annotations and CopyLabel. With existing (a copy rd controls), its
// labels, annotations, finalizers and other owners that the source lacks are kept, and its
// resourceVersion is carried for the update.
func desiredCopy(rd *appsv1alpha1.ResourceDistribution, src *Source, namespace string, existing metav1.Object) metav1.Object {
	var obj metav1.Object
	if src.Secret != nil {
		s := src.Secret.DeepCopy()
		obj = s
	} else {
		c := src.ConfigMap.DeepCopy()
		obj = c
	}
	obj.SetNamespace(namespace)
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[CopyLabel] = "true"
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[appsv1alpha1.ResourceDistributionHashAnnotation] = src.Hash
	annotations[appsv1alpha1.ResourceDistributionSourceAnnotation] = rd.Name
	finalizers := obj.GetFinalizers()
	var owners []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if !isDistributionRef(&ref) {
			owners = append(owners, ref)
		}
	}
	if existing != nil {
		obj.SetResourceVersion(existing.GetResourceVersion())
		obj.SetUID(existing.GetUID())
		for k, v := range existing.GetLabels() {
			if _, ok := labels[k]; !ok {
				labels[k] = v
			}
		}
		for k, v := range existing.GetAnnotations() {
			if _, ok := annotations[k]; !ok {
				annotations[k] = v
			}
		}
		// The copy's own order first, so that an unchanged copy compares equal.
		merged := slices.Clone(existing.GetFinalizers())
		for _, f := range finalizers {
			if !slices.Contains(merged, f) {
				merged = append(merged, f)
			}
		}
		finalizers = merged
		for _, ref := range existing.GetOwnerReferences() {
			if isDistributionRef(&ref) && ref.Controller != nil && *ref.Controller {
				continue // ours, re-made below (a re-created distribution has a new UID)
			}
			if !slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.UID == ref.UID }) {
				owners = append(owners, ref)
			}
		}
	}
	owners = append(owners, *metav1.NewControllerRef(rd, appsv1alpha1.SchemeGroupVersion.WithKind("ResourceDistribution")))
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	obj.SetFinalizers(finalizers)
	obj.SetOwnerReferences(owners)
	return obj
}

// upToDate reports whether existing already is want: same content (everything but metadata),
// labels, annotations, finalizers (as a set) and owners (as a set).
func upToDate(existing, want metav1.Object) bool {
	if !maps.Equal(existing.GetLabels(), want.GetLabels()) || !maps.Equal(existing.GetAnnotations(), want.GetAnnotations()) {
		return false
	}
	if !sameSet(existing.GetFinalizers(), want.GetFinalizers()) || !sameOwners(existing.GetOwnerReferences(), want.GetOwnerReferences()) {
		return false
	}
	return sameContent(existing, want)
}

// sameContent compares what is not metadata: a Secret's type, data and immutability, a
// ConfigMap's data, binary data and immutability. An empty map equals none, unset immutable false.
func sameContent(a, b metav1.Object) bool {
	switch x := a.(type) {
	case *corev1.Secret:
		y, ok := b.(*corev1.Secret)
		if !ok {
			return false
		}
		tx, ty := x.Type, y.Type
		if tx == "" {
			tx = corev1.SecretTypeOpaque
		}
		if ty == "" {
			ty = corev1.SecretTypeOpaque
		}
		return tx == ty && deref(x.Immutable) == deref(y.Immutable) && equality.Semantic.DeepEqual(emptyNil(x.Data), emptyNil(y.Data))
	case *corev1.ConfigMap:
		y, ok := b.(*corev1.ConfigMap)
		if !ok {
			return false
		}
		return deref(x.Immutable) == deref(y.Immutable) && maps.Equal(x.Data, y.Data) &&
			equality.Semantic.DeepEqual(emptyNil(x.BinaryData), emptyNil(y.BinaryData))
	}
	return false
}

func deref(b *bool) bool { return b != nil && *b }

func emptyNil[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !slices.ContainsFunc(b, func(o metav1.OwnerReference) bool {
			return o.UID == r.UID && o.Name == r.Name && o.Kind == r.Kind && o.APIVersion == r.APIVersion &&
				deref(o.Controller) == deref(r.Controller) && deref(o.BlockOwnerDeletion) == deref(r.BlockOwnerDeletion)
		}) {
			return false
		}
	}
	return true
}
