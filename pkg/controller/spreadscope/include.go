package spreadscope

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	wsclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
)

// Includer routes the pods of a WorkloadSpread's target to the pod webhooks before the spread is
// stored ("route before admit"). Why at admission: a spread applied with its workload (one
// kubectl apply) sees the workload's first pods created within milliseconds, before the leader's
// cache has the spread and long before a condition it wrote would reach the API server; those
// pods would be created unspread. The create returns once the API server serves both
// configurations with the spread's terms. Cost: up to four small writes per spread created (two
// here, the leader's two dropping the pending entries), nothing per pod.
type Includer struct {
	Client kubernetes.Interface
	// Spreads lists the stored spreads when the conditions must fall back to their namespaces.
	Spreads wsclient.WorkloadSpreadsGetter
	// MutatingConfiguration and ValidatingConfiguration default to the chart's.
	MutatingConfiguration, ValidatingConfiguration string
	// Clock stamps the pending entries; nil is the real clock.
	Clock clock.PassiveClock
}

// Include makes the conditions cover ws's target, recording it as pending on both
// configurations. A configuration without the entries (the gate off, webhooks installed
// otherwise) is left alone.
func (in *Includer) Include(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) error {
	terms := SpreadTerms(ws)
	if terms == (Terms{}) {
		return nil
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if in.Clock != nil {
		clk = in.Clock
	}
	ct, dt := Targets(in.MutatingConfiguration, in.ValidatingConfiguration)
	for _, t := range []webhookscope.Target{ct, dt} {
		if err := t.Include(ctx, in.Client, func(ctx context.Context, current webhookscope.State) (webhookscope.Scope, string, bool, error) {
			pend, err := webhookscope.ParsePending[pendingEntry](current.Pending)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Dropping the pending WorkloadSpreads of the webhook configuration")
			}
			now := clk.Now()
			kept, _ := settle(pend, nil, now)
			kept[key(ws)] = pendingEntry{Terms: terms, Since: metav1.NewTime(now)}
			want := webhookscope.Scope{}
			over := false
			add := func(entry, guard, term string) {
				want[entry] = webhookscope.WithTerm(current.Scope[entry], guard, term)
				over = over || len(want[entry]) > MaxExpressionLength
			}
			if t.Kind == webhookscope.Mutating {
				add(CreateWebhook, CreateGuard, terms.Create)
			} else {
				add(DeleteWebhook, DeleteGuard, terms.Delete)
				add(EvictionWebhook, EvictionGuard, terms.Eviction)
			}
			if over {
				coarse, err := in.namespaces(ctx, ws.Namespace, kept)
				if err != nil {
					return nil, "", false, err
				}
				for entry := range want {
					want[entry] = coarse
				}
			}
			encoded, err := webhookscope.EncodePending(kept)
			if err != nil {
				return nil, "", false, err
			}
			return want, encoded, true, nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// namespaces is the coarse condition: the namespaces of the stored and pending spreads and ns.
func (in *Includer) namespaces(ctx context.Context, ns string, pend map[string]pendingEntry) (string, error) {
	list, err := in.Spreads.WorkloadSpreads(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the WorkloadSpreads: %w", err)
	}
	names := []string{ns}
	for i := range list.Items {
		names = append(names, list.Items[i].Namespace)
	}
	for k := range pend {
		names = append(names, webhookscope.NamespaceOf(k))
	}
	return webhookscope.NamespacesExpression(names), nil
}
