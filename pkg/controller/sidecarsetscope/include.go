package sidecarsetscope

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// includeAttempts bounds the retries of Include when another writer changed the configuration.
const includeAttempts = 5

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
	configuration, webhook := in.Configuration, in.Webhook
	if configuration == "" {
		configuration = DefaultConfiguration
	}
	if webhook == "" {
		webhook = DefaultWebhook
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if in.Clock != nil {
		clk = in.Clock
	}
	configs := in.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	for range includeAttempts {
		cfg, err := configs.Get(ctx, configuration, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", configuration, err)
		}
		if _, found := currentExpression(cfg, webhook); !found {
			return nil
		}
		list, err := in.SidecarSets.SidecarSets().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing the SidecarSets: %w", err)
		}
		stored := make([]*appsv1beta1.SidecarSet, len(list.Items))
		for i := range list.Items {
			stored[i] = &list.Items[i]
		}
		pending, err := sidecarrules.ParsePending(cfg.Annotations)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Dropping the pending SidecarSets of the webhook configuration")
		}
		now := clk.Now()
		pending, _ = pending.Settle(nil, now)
		pending[ss.Name] = sidecarrules.Pending{Generation: ss.Generation, Term: term, Since: metav1.NewTime(now)}
		want := FromTerms(append(Terms(stored), pending.Terms()...))
		written, err := writeScope(ctx, in.Client, configuration, webhook, want, pending, cfg.ResourceVersion)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		return waitServed(ctx, in.Client, configuration, written.ResourceVersion)
	}
	return fmt.Errorf("MutatingWebhookConfiguration %s kept changing while SidecarSet %s was added to it", configuration, ss.Name)
}

// waitServed returns once the API server's cache serves the configuration at resourceVersion or
// later: a list at that resourceVersion with NotOlderThan is answered from the watch cache once
// it has caught up, and the API server's admission reads the configurations through an informer
// fed by that same cache.
func waitServed(ctx context.Context, client kubernetes.Interface, configuration, resourceVersion string) error {
	_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector(metav1.ObjectNameField, configuration).String(),
		ResourceVersion:      resourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to serve MutatingWebhookConfiguration %s at %s: %w", configuration, resourceVersion, err)
	}
	return nil
}
