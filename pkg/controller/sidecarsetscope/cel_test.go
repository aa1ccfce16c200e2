package sidecarsetscope

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func ss(name string, sel *metav1.LabelSelector, mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1beta1.SidecarSetSpec{Selector: sel}}
	for _, m := range mods {
		m(s)
	}
	return s
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func inNamespace(sel *metav1.LabelSelector) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) { s.Spec.NamespaceSelector = sel }
}

const (
	hasApp = "has(object.metadata.labels) && 'app' in object.metadata.labels"
)

func TestExpression(t *testing.T) {
	expr := func(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: reqs}
	}
	for name, tc := range map[string]struct {
		sets []*appsv1beta1.SidecarSet
		want string
	}{
		"no SidecarSet":    {want: NoneExpression},
		"only paused ones": {sets: []*appsv1beta1.SidecarSet{ss("p", matchLabels("app", "web"), func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })}, want: NoneExpression},
		"empty, missing and unparsable selectors select nothing": {sets: []*appsv1beta1.SidecarSet{
			ss("a", &metav1.LabelSelector{}), ss("b", nil), ss("c", expr(metav1.LabelSelectorRequirement{Key: "app", Operator: "Bad"})),
		}, want: NoneExpression},
		"matchLabels, sorted by key": {
			sets: []*appsv1beta1.SidecarSet{ss("a", matchLabels("tier", "fe", "app", "web"))},
			want: "object != null && ((" + hasApp + " && object.metadata.labels['app'] == 'web' && " +
				"has(object.metadata.labels) && 'tier' in object.metadata.labels && object.metadata.labels['tier'] == 'fe'))",
		},
		"In, NotIn, Exists, DoesNotExist": {
			sets: []*appsv1beta1.SidecarSet{ss("a", expr(
				metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
				metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"c"}},
				metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpExists},
				metav1.LabelSelectorRequirement{Key: "x", Operator: metav1.LabelSelectorOpDoesNotExist},
			))},
			want: "object != null && ((" + hasApp + " && object.metadata.labels['app'] in ['a', 'b'] && " +
				"(!(" + hasApp + ") || !(object.metadata.labels['app'] in ['c'])) && " +
				hasApp + " && !(has(object.metadata.labels) && 'x' in object.metadata.labels)))",
		},
		"one namespace by name adds request.namespace": {
			sets: []*appsv1beta1.SidecarSet{ss("a", matchLabels("app", "web"), inNamespace(matchLabels(corev1.LabelMetadataName, "team-a")))},
			want: "object != null && ((request.namespace == 'team-a' && " + hasApp + " && object.metadata.labels['app'] == 'web'))",
		},
		"other namespace selectors: labels only": {
			sets: []*appsv1beta1.SidecarSet{ss("a", matchLabels("app", "web"), inNamespace(matchLabels("team", "x")))},
			want: "object != null && ((" + hasApp + " && object.metadata.labels['app'] == 'web'))",
		},
		"OR, deduplicated and sorted": {
			sets: []*appsv1beta1.SidecarSet{ss("b", matchLabels("app", "web")), ss("a", matchLabels("app", "db")), ss("c", matchLabels("app", "web"))},
			want: "object != null && ((" + hasApp + " && object.metadata.labels['app'] == 'db') || (" +
				hasApp + " && object.metadata.labels['app'] == 'web'))",
		},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Expression(tc.sets))
		})
	}
}

func TestExpressionFallsBackWhenTooLarge(t *testing.T) {
	var sets []*appsv1beta1.SidecarSet
	for i := range 500 {
		sets = append(sets, ss(fmt.Sprint(i), matchLabels("app", fmt.Sprintf("application-%d", i))))
	}
	got := Expression(sets)
	assert.Equal(t, AnyLabelExpression, got)
	few := Expression(sets[:20])
	assert.NotEqual(t, AnyLabelExpression, few, "20 SidecarSets fit")
	assert.LessOrEqual(t, len(few), MaxExpressionLength)
	assert.Equal(t, 20, strings.Count(few, "=="))
}
