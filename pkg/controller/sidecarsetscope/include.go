package sidecarsetscope

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// Includer widens the injection webhook's routing to a SidecarSet being admitted, before it is
// stored. Why at admission: a workload applied right after its SidecarSet (one `kubectl apply
// -f`) creates pods within milliseconds, before the leader's cache has the new SidecarSet and
// long before a condition it wrote would reach the API server; such pods were never sent to the
// webhook and got no sidecar. Admission is the last moment the SidecarSet's author waits for, so
// the routing is made to include it there, and the create returns only once the API server's
// cache of the configuration has it. Cost: two small writes of the configuration per SidecarSet
// create or update (this one, and the leader dropping the pending entry), nothing per pod.
type Includer struct {
	Client      kubernetes.Interface
	SidecarSets kruiseclient.SidecarSetsGetter
	// Configuration and Webhook default to DefaultConfiguration and DefaultWebhook.
	Configuration, Webhook string
	// Clock stamps the pending entries; nil is the real clock.
	Clock clock.PassiveClock
}

// Include makes the injection webhook's condition cover ss, recording it as pending (
// sidecarrules.PendingAnnotation) with the SidecarSets stored now, and waits until the API server serves that
// configuration from its cache, which its admission reads. A configuration without the entry
// (webhooks installed otherwise) is left alone.
func (in *Includer) Include(ctx context.Context, ss *appsv1beta1.SidecarSet) error {
	term := Term(ss)
	if term == "" {
		return nil // paused, or selecting nothing: nothing to route
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if in.Clock != nil {
		clk = in.Clock
	}
	t := target(in.Configuration, in.Webhook)
	return t.Include(ctx, in.Client, func(ctx context.Context, current webhookscope.State) (webhookscope.Scope, string, bool, error) {
		list, err := in.SidecarSets.SidecarSets().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, "", false, fmt.Errorf("listing the SidecarSets: %w", err)
		}
		stored := make([]*appsv1beta1.SidecarSet, len(list.Items))
		for i := range list.Items {
			stored[i] = &list.Items[i]
		}
		pending, err := sidecarrules.ParsePending(map[string]string{sidecarrules.PendingAnnotation: current.Pending})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Dropping the pending SidecarSets of the webhook configuration")
		}
		now := clk.Now()
		pending, _ = pending.Settle(nil, now)
		pending[ss.Name] = sidecarrules.Pending{Generation: ss.Generation, Term: term, Since: metav1.NewTime(now)}
		encoded, err := pending.Encode()
		if err != nil {
			return nil, "", false, err
		}
		return webhookscope.Scope{t.Entries[0]: FromTerms(append(Terms(stored), pending.Terms()...))}, encoded, true, nil
	})
}
