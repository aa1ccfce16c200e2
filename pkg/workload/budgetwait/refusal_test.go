package budgetwait

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestRefused(t *testing.T) {
	const reason = "PodUnavailableBudget ns/pub: no disruption allowed (unavailableAllowed 0)"
	webhook := func(code int32, msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code,
			Message: `admission webhook "vpod.kruise.io" denied the request: ` + msg}}
	}
	for name, tc := range map[string]struct {
		err    error
		reason string
	}{
		"the webhook's refusal":    {err: gen.BudgetRefusal(reason), reason: reason},
		"wrapped":                  {err: fmt.Errorf("deleting pod a: %w", gen.BudgetRefusal(reason)), reason: reason},
		"too many requests":        {err: webhook(429, reason), reason: reason},
		"a denial without a code":  {err: webhook(400, reason), reason: reason},
		"the reason wrapped":       {err: webhook(429, "DELETE ns/a (deleting the pod) is refused now: "+reason), reason: reason},
		"another webhook's denial": {err: webhook(403, "deletion protection: label Always")},
		"a budget named in a 500":  {err: webhook(500, reason)},
		"an RBAC refusal":          {err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "a", errors.New("PodUnavailableBudget"))},
		"not an API error":         {err: errors.New(`admission webhook "x" denied the request: PodUnavailableBudget`)},
		"no error":                 {},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := Refused(tc.err)
			assert.Equal(t, tc.reason != "", ok)
			assert.Equal(t, tc.reason, got)
		})
	}
}

func TestDeletion(t *testing.T) {
	w := Deletion(pod("a"), gen.BudgetRefusal("PodUnavailableBudget ns/pub: no"))
	assert.Equal(t, &Wait{Namespace: "ns", Pod: "a", Op: policyv1alpha1.PubDeleteOperation, Reason: "PodUnavailableBudget ns/pub: no"}, w)
	assert.Nil(t, Deletion(pod("a"), errors.New("boom")))
}
