package ownership

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodSelector is the selector by which a workload of kind owns its pods, when it can own the
// pods it creates: a valid, non-empty selector that matches the pod template's labels. Otherwise
// problem says why, for the workload's InvalidSpec event, and the workload creates no pod (the
// validating webhook refuses such a spec; this is for one admitted without it: pods the selector
// does not match would be released as soon as created).
func PodSelector(kind string, selector *metav1.LabelSelector, templateLabels map[string]string) (sel labels.Selector, problem string) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		return nil, fmt.Sprintf("spec.selector %v: it must be a valid, non-empty selector", err)
	}
	if !sel.Matches(labels.Set(templateLabels)) {
		return nil, fmt.Sprintf("spec.template.metadata.labels do not match the selector %q: the %s would not own the pods it creates; no pod is created", sel.String(), kind)
	}
	return sel, ""
}
