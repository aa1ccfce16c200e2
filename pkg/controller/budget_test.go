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
// PodUnavailableBudgetUpdateGate (Alpha, off by default) and before marking a pod for recreation
// with PodUnavailableBudgetDeleteGate (Beta, on).
func TestBudgetCheck(t *testing.T) {
	b := gen.AllowingBudget()
	for _, tc := range []struct {
		gates            string
		inPlace, deletes bool
	}{
		{gates: "", deletes: true},
		{gates: "PodUnavailableBudgetUpdateGate=true", inPlace: true, deletes: true},
		{gates: "PodUnavailableBudgetDeleteGate=false"},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, tc.gates)
			assert.Equal(t, budgetwait.Check{Budget: b, InPlace: tc.inPlace, Deletes: tc.deletes}, Deps{Options: o, Budget: b}.budgetCheck())
		})
	}
	assert.Nil(t, Deps{Options: testOptions()}.budgetCheck().Budget, "no budget wired: none asked")
}

// TestWorkloadBudget: the workloads get podbudget's Admitter with either budget gate, and nothing
// (not a typed nil) with both off.
func TestWorkloadBudget(t *testing.T) {
	kube, kruise := fake.NewClientset(), kruisefake.NewSimpleClientset()
	factory, kruiseFactory := informers.NewSharedInformerFactory(kube, 0), kruiseinformers.NewSharedInformerFactory(kruise, 0)
	o := testOptions()
	o.Features = gateFrom(t, "PodUnavailableBudgetDeleteGate=false")
	assert.True(t, workloadBudget(o, kruise, factory, kruiseFactory) == nil, "no Admitter, not even a typed nil")
	for _, gates := range []string{"", "PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=true"} {
		o.Features = gateFrom(t, gates)
		assert.IsType(t, &podbudget.Admitter{}, workloadBudget(o, kruise, factory, kruiseFactory), gates)
	}
}

// TestBudgetMadeOnFirstUse: the workloads' shared Budget is made when the first of them is built
// (newBudget, once), and an explicit Deps.Budget wins.
func TestBudgetMadeOnFirstUse(t *testing.T) {
	made := 0
	b := gen.AllowingBudget()
	d := Deps{Options: testOptions(), newBudget: func() budgetwait.Budget { made++; return b }}
	assert.Equal(t, 0, made, "nothing made before a workload asks")
	assert.Same(t, b, d.budgetCheck().Budget)
	other := gen.AllowingBudget()
	d.Budget = other
	assert.Same(t, other, d.budgetCheck().Budget)
	assert.Equal(t, 1, made)
}
