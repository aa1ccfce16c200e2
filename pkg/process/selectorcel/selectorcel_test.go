package selectorcel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParts(t *testing.T) {
	sel := &metav1.LabelSelector{
		MatchLabels: map[string]string{"b": "2", "a": "1"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
			{Key: "canary", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}},
			{Key: "x", Operator: metav1.LabelSelectorOpExists},
			{Key: "y", Operator: metav1.LabelSelectorOpDoesNotExist},
		},
	}
	has := func(k string) string {
		return "has(oldObject.metadata.labels) && '" + k + "' in oldObject.metadata.labels"
	}
	assert.Equal(t, []string{
		has("a") + " && oldObject.metadata.labels['a'] == '1'",
		has("b") + " && oldObject.metadata.labels['b'] == '2'",
		has("tier") + " && oldObject.metadata.labels['tier'] in ['web', 'api']",
		"(!(" + has("canary") + ") || !(oldObject.metadata.labels['canary'] in ['true']))",
		has("x"),
		"!(" + has("y") + ")",
	}, Parts(sel, "oldObject"))
}

func TestPartsOfNoSelector(t *testing.T) {
	assert.Nil(t, Parts(nil, "object"))
	assert.Nil(t, Parts(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}, "object"))
	assert.Empty(t, Parts(&metav1.LabelSelector{}, "object"))
}

// Label keys and values cannot hold quotes or backslashes; the literals escape them anyway.
func TestQuote(t *testing.T) {
	assert.Equal(t, `'a\\b\'c'`, Quote(`a\b'c`))
	assert.Equal(t, `'a.b/c'`, Quote("a.b/c"))
	assert.Equal(t, "[]", List(nil))
}
