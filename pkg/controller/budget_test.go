package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// TestBudgetCheck: the workloads get Deps.Budget, asked before in-place updates only with gate
// PodUnavailableBudgetUpdateGate (Alpha, off by default).
func TestBudgetCheck(t *testing.T) {
	b := gen.AllowingBudget()
	for _, tc := range []struct {
		gates   string
		inPlace bool
	}{
		{gates: "", inPlace: false},
		{gates: "PodUnavailableBudgetUpdateGate=true", inPlace: true},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, tc.gates)
			assert.Equal(t, budgetwait.Check{Budget: b, InPlace: tc.inPlace}, Deps{Options: o, Budget: b}.budgetCheck())
		})
	}
	assert.Equal(t, budgetwait.Check{}, Deps{Options: testOptions()}.budgetCheck(), "no budget wired: none asked")
}
