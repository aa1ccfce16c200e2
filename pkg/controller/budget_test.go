package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
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

// TestWorkloadBudget: the workloads get podbudget's Admitter with gate
// PodUnavailableBudgetUpdateGate, and nothing (not a typed nil) without it.
func TestWorkloadBudget(t *testing.T) {
	kube, kruise := fake.NewClientset(), kruisefake.NewSimpleClientset()
	factory, kruiseFactory := informers.NewSharedInformerFactory(kube, 0), kruiseinformers.NewSharedInformerFactory(kruise, 0)
	o := testOptions()
	assert.True(t, workloadBudget(o, kruise, factory, kruiseFactory) == nil, "no Admitter, not even a typed nil")
	o.Features = gateFrom(t, "PodUnavailableBudgetUpdateGate=true")
	assert.IsType(t, &podbudget.Admitter{}, workloadBudget(o, kruise, factory, kruiseFactory))
}
