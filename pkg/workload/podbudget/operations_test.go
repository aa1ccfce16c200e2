package podbudget

import (
	"testing"

	"github.com/stretchr/testify/assert"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestParseOperations(t *testing.T) {
	const (
		del    = policyv1alpha1.PubDeleteOperation
		evict  = policyv1alpha1.PubEvictOperation
		update = policyv1alpha1.PubUpdateOperation
		resize = policyv1alpha1.PubResizeOperation
	)
	for name, tc := range map[string]struct {
		value string
		want  map[policyv1alpha1.PubOperation]bool
		err   string
	}{
		"empty is the default":    {value: "", want: map[policyv1alpha1.PubOperation]bool{del: true, evict: true, update: true}},
		"blanks are the default":  {value: " , ", want: map[policyv1alpha1.PubOperation]bool{del: true, evict: true, update: true}},
		"one":                     {value: "DELETE", want: map[policyv1alpha1.PubOperation]bool{del: true}},
		"resize and blanks":       {value: "UPDATE, RESIZE", want: map[policyv1alpha1.PubOperation]bool{update: true, resize: true}},
		"lower case is not valid": {value: "delete,EVICT", want: map[policyv1alpha1.PubOperation]bool{evict: true}, err: `"delete"`},
		"nothing valid":           {value: "PATCH", want: map[policyv1alpha1.PubOperation]bool{}, err: `kruise.io/pub-protect-operations: "PATCH": want DELETE, EVICT, UPDATE or RESIZE`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseOperations(tc.value)
			assert.Equal(t, tc.want, got)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.err)
			}
		})
	}
}

func TestProtects(t *testing.T) {
	with := func(v string) *policyv1alpha1.PodUnavailableBudget {
		return gen.PUB("b", gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubProtectOperationAnnotation: v}))
	}
	assert.True(t, Protects(gen.PUB("b"), policyv1alpha1.PubEvictOperation), "default guards EVICT")
	assert.False(t, Protects(gen.PUB("b"), policyv1alpha1.PubResizeOperation), "default does not guard RESIZE")
	assert.False(t, Protects(with("DELETE"), policyv1alpha1.PubUpdateOperation))
	assert.True(t, Protects(with("RESIZE"), policyv1alpha1.PubResizeOperation))
	// A typo never lowers protection: the defaults and the valid values both hold.
	assert.True(t, Protects(with("RESIZE,UPDTE"), policyv1alpha1.PubDeleteOperation))
	assert.True(t, Protects(with("RESIZE,UPDTE"), policyv1alpha1.PubResizeOperation))
}
