package sidecarrules

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Selects says whether ss selects pod, whose namespace carries nsLabels: its selector matches the
// pod's labels and its namespaceSelector (none: every namespace) the namespace's labels. A
// SidecarSet without a selector selects nothing (the CRD refuses one; this guards an object
// stored before). A selector that does not parse is an error naming the SidecarSet.
func Selects(ss *appsv1beta1.SidecarSet, pod *corev1.Pod, nsLabels map[string]string) (bool, error) {
	if ss.Spec.Selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil {
		return false, fmt.Errorf("SidecarSet %s: spec.selector: %w", ss.Name, err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		return false, nil
	}
	return SelectsNamespace(ss, nsLabels)
}

// SelectsNamespace says whether ss's namespaceSelector (none: every namespace) matches a namespace
// with nsLabels. A v1alpha1 spec.namespace arrives here as a namespaceSelector on
// kubernetes.io/metadata.name (the conversion's doing).
func SelectsNamespace(ss *appsv1beta1.SidecarSet, nsLabels map[string]string) (bool, error) {
	if ss.Spec.NamespaceSelector == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("SidecarSet %s: spec.namespaceSelector: %w", ss.Name, err)
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}
