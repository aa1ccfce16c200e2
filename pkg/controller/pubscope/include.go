package pubscope

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	pubclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/policy/v1alpha1"
)

// includeAttempts bounds the retries of Include when another writer changed the configuration.
const includeAttempts = 5

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
	configuration := in.Configuration
	if configuration == "" {
		configuration = DefaultConfiguration
	}
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
	configs := in.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	for range includeAttempts {
		cfg, err := configs.Get(ctx, configuration, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", configuration, err)
		}
		current, found := currentExpressions(cfg)
		if !found {
			return nil
		}
		pend, err := parsePending(cfg.Annotations)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Dropping the pending PodUnavailableBudgets of the webhook configuration")
		}
		now := clk.Now()
		pend, _ = pend.settle(nil, now)
		pend[pub.Namespace+"/"+pub.Name] = pending{Terms: terms, Since: metav1.NewTime(now)}
		want := scope{pod: withTerm(current.pod, "oldObject != null && ", terms.Pod), eviction: withTerm(current.eviction, "", terms.Eviction)}
		if len(want.pod) > MaxExpressionLength || len(want.eviction) > MaxExpressionLength {
			coarse, err := in.namespaces(ctx, pub.Namespace, pend)
			if err != nil {
				return err
			}
			want = scope{pod: coarse, eviction: coarse}
		}
		written, err := writeScope(ctx, in.Client, configuration, want, pend, cfg.ResourceVersion)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		return waitServed(ctx, in.Client, configuration, written.ResourceVersion)
	}
	return fmt.Errorf("ValidatingWebhookConfiguration %s kept changing while PodUnavailableBudget %s/%s was added to it", configuration, pub.Namespace, pub.Name)
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
		names = append(names, namespaceOf(key))
	}
	return NamespacesExpression(names), nil
}

// withTerm is current ORed with term (guarded by prefix), unless it has it already.
func withTerm(current, prefix, term string) string {
	switch {
	case term == "" || strings.Contains(current, term):
		return current
	case current == "" || current == NoneExpression:
		return prefix + "(" + term + ")"
	}
	return "(" + current + ") || (" + prefix + term + ")"
}

// waitServed returns once the API server's cache serves the configuration at resourceVersion or
// later: a list at that resourceVersion with NotOlderThan is answered from the watch cache once
// it has caught up, and the API server's admission reads the configurations through an informer
// fed by that same cache.
func waitServed(ctx context.Context, client kubernetes.Interface, configuration, resourceVersion string) error {
	_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector(metav1.ObjectNameField, configuration).String(),
		ResourceVersion:      resourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to serve ValidatingWebhookConfiguration %s at %s: %w", configuration, resourceVersion, err)
	}
	return nil
}
