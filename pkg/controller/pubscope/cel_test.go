package pubscope

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

func selectorBudget(ns, name string, sel *metav1.LabelSelector) *policyv1alpha1.PodUnavailableBudget {
	one := intstr.FromInt32(1)
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{Selector: sel, MaxUnavailable: &one},
	}
}

func targetBudget(ns, name, apiVersion, kind, target string) *policyv1alpha1.PodUnavailableBudget {
	b := selectorBudget(ns, name, nil)
	b.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target}
	return b
}

func app(v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
}

const hasApp = "has(oldObject.metadata.labels) && 'app' in oldObject.metadata.labels"

func TestBudgetTermsOfASelector(t *testing.T) {
	pods := []PodName{
		{Namespace: "team", Name: "web-7d9f8c6b5-x2x4z", GenerateName: "web-7d9f8c6b5-", Labels: map[string]string{"app": "web"}, Owner: "web-7d9f8c6b5"},
		{Namespace: "team", Name: "web-7d9f8c6b5-q9w8e", GenerateName: "web-7d9f8c6b5-", Labels: map[string]string{"app": "web"}, Owner: "web-7d9f8c6b5"},
		{Namespace: "team", Name: "web-cs-b7k2p", Labels: map[string]string{"app": "web"}, Owner: "web-cs"},
		{Namespace: "team", Name: "web-sts-12", Labels: map[string]string{"app": "web"}, Owner: "web-sts"},
		{Namespace: "team", Name: "web.bare", Labels: map[string]string{"app": "web"}},
		{Namespace: "team", Name: "db-0", Labels: map[string]string{"app": "db"}, Owner: "db"},
		{Namespace: "other", Name: "web-x", Labels: map[string]string{"app": "web"}},
	}
	got := BudgetTerms(selectorBudget("team", "web", app("web")), pods)
	assert.Equal(t, "(request.namespace == 'team' && "+hasApp+" && oldObject.metadata.labels['app'] == 'web')", got.Pod)
	assert.Equal(t, `(request.namespace == 'team' && request.name.matches('^(?:web-7d9f8c6b5-[a-z0-9]{5}|web-cs-[a-z0-9]{5}|web-sts-[0-9]+|web\\.bare)$'))`, got.Eviction)

	none := BudgetTerms(selectorBudget("team", "cache", app("cache")), pods)
	assert.Empty(t, none.Eviction, "no pod covered: no eviction to send")
	assert.NotEmpty(t, none.Pod)

	for _, sel := range []*metav1.LabelSelector{nil, {}, {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bad"}}}} {
		assert.Equal(t, Terms{Pod: "(request.namespace == 'team')", Eviction: "(request.namespace == 'team')"},
			BudgetTerms(selectorBudget("team", "x", sel), pods), "a selector kruise cannot read: the whole namespace")
	}
}

// The regular expressions match the names of the pods that made them and of their siblings to
// come, and no other.
func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		pod          PodName
		match, other []string
	}{
		{PodName{Name: "web-7d9f8-x2x4z", GenerateName: "web-7d9f8-", Owner: "web-7d9f8"}, []string{"web-7d9f8-bbbbb"}, []string{"web-7d9f8-bbbbbb", "web-7d9f8-x2x4", "xweb-7d9f8-bbbbb"}},
		{PodName{Name: "db-3", Owner: "db"}, []string{"db-0", "db-12"}, []string{"db-a", "db-", "db-1-2"}},
		{PodName{Name: "cs-b7k2p", Owner: "cs"}, []string{"cs-z2z2z"}, []string{"cs-z2z2", "cs-z2z2z2"}},
		{PodName{Name: "a.b"}, []string{"a.b"}, []string{"axb", "a.bc"}},
		{PodName{Name: "job-x", Owner: "other"}, []string{"job-x"}, []string{"job-y"}},
	} {
		re := regexp.MustCompile(alternation([]string{tc.pod.Pattern()}))
		for _, n := range tc.match {
			assert.True(t, re.MatchString(n), "%s should match %s", re, n)
		}
		for _, n := range tc.other {
			assert.False(t, re.MatchString(n), "%s should not match %s", re, n)
		}
	}
}

func TestBudgetTermsOfATarget(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind, name string
		owner                  string // in the pod term
		names, notNames        []string
	}{
		{"apps.kruise.io/v1alpha1", "CloneSet", "web", "r.apiVersion.startsWith('apps.kruise.io/') && r.kind == 'CloneSet' && r.name == 'web'", []string{"web-b7k2p"}, []string{"web-1", "webb-b7k2p"}},
		{"apps.kruise.io/v1beta1", "StatefulSet", "db", "r.kind == 'StatefulSet' && r.name == 'db'", []string{"db-0", "db-10"}, []string{"db-b7k2p"}},
		{"apps/v1", "StatefulSet", "db", "r.apiVersion.startsWith('apps/') && r.kind == 'StatefulSet'", []string{"db-0"}, []string{"db-x"}},
		{"apps/v1", "Deployment", "web", "r.kind == 'ReplicaSet' && r.name.matches('^web-[a-z0-9]+$')", []string{"web-7d9f8c6b5-x2x4z"}, []string{"web-x2x4z", "web-a-b-x2x4z"}},
		{"apps/v1", "ReplicaSet", "web-1", "r.kind == 'ReplicaSet' && r.name == 'web-1'", []string{"web-1-x2x4z"}, []string{"web-1-2-x2x4z"}},
		{"v1", "ReplicationController", "rc", "r.apiVersion == 'v1' && r.kind == 'ReplicationController'", []string{"rc-x2x4z"}, []string{"rc-1"}},
	} {
		got := BudgetTerms(targetBudget("team", "b", tc.apiVersion, tc.kind, tc.name), nil)
		assert.Contains(t, got.Pod, "request.namespace == 'team' && has(oldObject.metadata.ownerReferences)", tc.kind)
		assert.Contains(t, got.Pod, tc.owner, tc.kind)
		m := regexp.MustCompile(`request\.name\.matches\('(.*)'\)\)$`).FindStringSubmatch(got.Eviction)
		require.Len(t, m, 2, got.Eviction)
		re := regexp.MustCompile(strings.ReplaceAll(m[1], `\\`, `\`))
		for _, n := range tc.names {
			assert.True(t, re.MatchString(n), "%s %s", re, n)
		}
		for _, n := range tc.notNames {
			assert.False(t, re.MatchString(n), "%s %s", re, n)
		}
	}
	coarse := Terms{Pod: "(request.namespace == 'team')", Eviction: "(request.namespace == 'team')"}
	assert.Equal(t, coarse, BudgetTerms(targetBudget("team", "b", "argoproj.io/v1alpha1", "Rollout", "web"), nil), "a kind kruise does not know")
	assert.Equal(t, coarse, BudgetTerms(targetBudget("team", "b", "apps/v1", "ReplicaSet", strings.Repeat("r", 60)), nil), "a prefix the API server cuts")
	assert.Equal(t, coarse, BudgetTerms(targetBudget("team", "b", "a/b/c", "CloneSet", "web"), nil))
}

func TestExpressions(t *testing.T) {
	pod, eviction, coarse := Expressions(nil, nil)
	assert.Equal(t, []string{NoneExpression, NoneExpression}, []string{pod, eviction})
	assert.False(t, coarse)

	a, b := Terms{Pod: "(A)", Eviction: "(a)"}, Terms{Pod: "(B)"}
	pod, eviction, _ = Expressions([]Terms{b, a, a}, []string{"x"})
	assert.Equal(t, "oldObject != null && ((A) || (B))", pod, "sorted, deduplicated")
	assert.Equal(t, "((a))", eviction)

	var many []Terms
	var namespaces []string
	for i := range 400 {
		many = append(many, BudgetTerms(selectorBudget(fmt.Sprintf("ns-%d", i%7), "b", app(fmt.Sprintf("application-%d", i))), nil))
		namespaces = append(namespaces, fmt.Sprintf("ns-%d", i%7))
	}
	pod, eviction, coarse = Expressions(many, namespaces)
	assert.True(t, coarse)
	assert.Equal(t, "request.namespace in ['ns-0', 'ns-1', 'ns-2', 'ns-3', 'ns-4', 'ns-5', 'ns-6']", pod)
	assert.Equal(t, pod, eviction)
	pod, _, coarse = Expressions(many[:50], namespaces)
	assert.False(t, coarse, "50 budgets fit")
	assert.LessOrEqual(t, len(pod), MaxExpressionLength)
}
