package controller

import (
	"k8s.io/client-go/informers"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/features"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// workloadBudget is the PodUnavailableBudget the workloads consult before an in-place update
// (Deps.Budget): one Admitter for all of them, reading budgets and the workloads above a pod from
// the caches the PodUnavailableBudget controller shares. nil, and no informer registered, when
// gate PodUnavailableBudgetUpdateGate is off: no workload would ask it.
func workloadBudget(o *Options, client versioned.Interface, factory informers.SharedInformerFactory, kruiseFactory kruiseinformers.SharedInformerFactory) budgetwait.Budget {
	if !o.featureGate().Enabled(features.PodUnavailableBudgetUpdateGate) {
		return nil
	}
	apps, kruiseApps := factory.Apps().V1(), kruiseFactory.Apps().V1beta1()
	return podbudget.NewAdmitter(podbudget.AdmitterConfig{
		Client:  client,
		Budgets: kruiseFactory.Policy().V1alpha1().PodUnavailableBudgets().Lister(),
		Owners: podbudget.Listers{
			ReplicaSets: apps.ReplicaSets().Lister(), Deployments: apps.Deployments().Lister(),
			StatefulSets: apps.StatefulSets().Lister(), CloneSets: kruiseApps.CloneSets().Lister(),
			AdvancedStatefulSets: kruiseApps.StatefulSets().Lister(),
		},
	})
}
