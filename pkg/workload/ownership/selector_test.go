package ownership

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodSelector(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name     string
		selector *metav1.LabelSelector
		labels   map[string]string
		problem  string
	}{
		{name: "matching", selector: &metav1.LabelSelector{MatchLabels: web}, labels: web},
		{name: "empty", selector: &metav1.LabelSelector{}, labels: web, problem: "spec.selector <nil>: it must be a valid, non-empty selector"},
		{name: "invalid", selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}}}, labels: web,
			problem: `spec.selector "Sometimes" is not a valid label selector operator: it must be a valid, non-empty selector`},
		{name: "not matching the template", selector: &metav1.LabelSelector{MatchLabels: web}, labels: map[string]string{"app": "db"},
			problem: `spec.template.metadata.labels do not match the selector "app=web": the CloneSet would not own the pods it creates; no pod is created`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, problem := PodSelector("CloneSet", tc.selector, tc.labels)
			if problem != tc.problem {
				t.Errorf("problem = %q, want %q", problem, tc.problem)
			}
			if (sel != nil) != (tc.problem == "") {
				t.Errorf("selector = %v with problem %q", sel, problem)
			}
		})
	}
}
