package podbudget

import (
	"fmt"
	"strings"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// defaultOperations are guarded when the budget does not list any.
var defaultOperations = []policyv1alpha1.PubOperation{
	policyv1alpha1.PubDeleteOperation, policyv1alpha1.PubEvictOperation, policyv1alpha1.PubUpdateOperation,
}

// knownOperation reports whether op is one a budget can guard.
func knownOperation(op policyv1alpha1.PubOperation) bool {
	switch op {
	case policyv1alpha1.PubDeleteOperation, policyv1alpha1.PubEvictOperation,
		policyv1alpha1.PubUpdateOperation, policyv1alpha1.PubResizeOperation:
		return true
	}
	return false
}

// ParseOperations reads the value of the annotation kruise.io/pub-protect-operations: a comma
// list of DELETE, EVICT, UPDATE and RESIZE (blanks around items ignored). Empty means the
// default, DELETE, EVICT and UPDATE. The error names the values that are none of these (the
// budget's validating webhook reports it); the set then holds the valid ones.
func ParseOperations(value string) (map[policyv1alpha1.PubOperation]bool, error) {
	out := map[policyv1alpha1.PubOperation]bool{}
	var bad []string
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		op := policyv1alpha1.PubOperation(item)
		if !knownOperation(op) {
			bad = append(bad, fmt.Sprintf("%q", item))
			continue
		}
		out[op] = true
	}
	if len(out) == 0 && len(bad) == 0 {
		for _, op := range defaultOperations {
			out[op] = true
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("annotation %s: %s: want DELETE, EVICT, UPDATE or RESIZE",
			policyv1alpha1.PubProtectOperationAnnotation, strings.Join(bad, ", "))
	}
	return out, nil
}

// Protects reports whether budget b guards op. An annotation with values that are not
// operations (which the validating webhook refuses, but an older object may carry) guards the
// default operations as well as the valid ones it lists: a typo never lowers protection.
func Protects(b *policyv1alpha1.PodUnavailableBudget, op policyv1alpha1.PubOperation) bool {
	ops, err := ParseOperations(b.Annotations[policyv1alpha1.PubProtectOperationAnnotation])
	if err != nil {
		for _, d := range defaultOperations {
			ops[d] = true
		}
	}
	return ops[op]
}
