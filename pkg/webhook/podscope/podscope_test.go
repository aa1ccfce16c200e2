package podscope

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestExcluded(t *testing.T) {
	for _, tc := range []struct {
		namespace, kruise string
		want              bool
	}{
		{"kube-system", "kruise-system", true},
		{"kruise-system", "kruise-system", true},
		{"ops", "ops", true},
		{"default", "kruise-system", false},
		{"kruise-system", "ops", false},
		{"kube-system", "kube-system", true},
		{"kube-public", "kruise-system", false},
	} {
		assert.Equal(t, tc.want, Excluded(tc.namespace, tc.kruise), "%s with kruise in %s", tc.namespace, tc.kruise)
	}
}

func TestExpressionAndSelector(t *testing.T) {
	assert.Equal(t, "request.namespace != 'kube-system' && request.namespace != 'kruise-system'", Expression("kruise-system"))
	assert.Equal(t, "request.namespace != 'kube-system'", Expression("kube-system"), "no duplicate term")
	assert.Equal(t, ConditionName, Condition("x").Name)

	sel, err := metav1.LabelSelectorAsSelector(NamespaceSelector("kruise-system"))
	assert.NoError(t, err)
	for ns, want := range map[string]bool{"kube-system": false, "kruise-system": false, "default": true, "team-a": true} {
		assert.Equal(t, want, sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}), ns)
	}
}
