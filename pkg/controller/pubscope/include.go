package pubscope

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	pubclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
)

// Includer widens the pod webhooks' conditions to a budget being admitted, before it is stored.
// Why at admission: a budget applied right before a drain (or with its workload) must protect
// the pods from the moment it exists; the leader's cache, and a condition it writes, come later.
// The create returns only once the API server's cache of the configuration has the condition.
// Cost: two small writes of the configuration per budget created (this one, and the leader
// dropping the pending entry), nothing per pod.
type Includer struct {
	Client kubernetes.Interface
	// Budgets lists the budgets when the conditions must fall back to their namespaces.
	Budgets pubclient.PodUnavailableBudgetsGetter
	// Configuration defaults to DefaultConfiguration.
	Configuration string
	// Clock stamps the pending entries; nil is the real clock.
	Clock clock.PassiveClock
}

// Include makes the conditions cover pub, recording it as pending, and waits until the API server
// serves that configuration from its cache, which its admission reads. A configuration without
// the two entries (webhooks installed otherwise) is left alone.
func (in *Includer) Include(ctx context.Context, pub *policyv1alpha1.PodUnavailableBudget) error {
	var clk clock.PassiveClock = clock.RealClock{}
	if in.Clock != nil {
		clk = in.Clock
	}
	var pods []PodName
	if pub.Spec.TargetReference == nil && pub.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
		if err == nil {
			list, err := in.Client.CoreV1().Pods(pub.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			if err != nil {
				return fmt.Errorf("listing the pods PodUnavailableBudget %s/%s selects: %w", pub.Namespace, pub.Name, err)
			}
			for i := range list.Items {
				pods = append(pods, NameOf(&list.Items[i]))
			}
		}
	}
	terms := BudgetTerms(pub, pods)
	return target(in.Configuration).Include(ctx, in.Client, func(ctx context.Context, current webhookscope.State) (webhookscope.Scope, string, bool, error) {
		pend, err := webhookscope.ParsePending[pendingEntry](current.Pending)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Dropping the pending PodUnavailableBudgets of the webhook configuration")
		}
		now := clk.Now()
		kept, _ := pendingSet(pend).settle(nil, now)
		kept[pub.Namespace+"/"+pub.Name] = pendingEntry{Terms: terms, Since: metav1.NewTime(now)}
		pod := webhookscope.WithTerm(current.Scope[PodWebhook], "oldObject != null && ", terms.Pod)
		eviction := webhookscope.WithTerm(current.Scope[EvictionWebhook], "", terms.Eviction)
		if len(pod) > MaxExpressionLength || len(eviction) > MaxExpressionLength {
			coarse, err := in.namespaces(ctx, pub.Namespace, kept)
			if err != nil {
				return nil, "", false, err
			}
			pod, eviction = coarse, coarse
		}
		encoded, err := kept.encode()
		if err != nil {
			return nil, "", false, err
		}
		return webhookscope.Scope{PodWebhook: pod, EvictionWebhook: eviction}, encoded, true, nil
	})
}

// namespaces is the coarse condition: the namespaces of the stored and pending budgets and ns.
func (in *Includer) namespaces(ctx context.Context, ns string, pend pendingSet) (string, error) {
	list, err := in.Budgets.PodUnavailableBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the PodUnavailableBudgets: %w", err)
	}
	names := []string{ns}
	for i := range list.Items {
		names = append(names, list.Items[i].Namespace)
	}
	for key := range pend {
		names = append(names, webhookscope.NamespaceOf(key))
	}
	return webhookscope.NamespacesExpression(names), nil
}
