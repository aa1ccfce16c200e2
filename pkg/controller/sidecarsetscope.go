package controller

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
)

// buildSidecarSetScope adapts Deps to the controller that keeps the SidecarSet injection
// webhook's matchConditions. Without --webhook-enabled there is no webhook to scope (and no RBAC
// to read its configuration): it idles.
func buildSidecarSetScope(d Deps) (Controller, error) {
	if !d.Options.WebhookEnabled {
		return idle{name: sidecarsetscope.Name, why: "the webhooks are off"}, nil
	}
	return sidecarsetscope.New(sidecarsetscope.Config{
		Client:        d.Client,
		SidecarSets:   d.KruiseInformerFactory.Apps().V1beta1().SidecarSets(),
		Configuration: certs.MutatingWebhookConfigurationName,
	})
}

// idle is a controller with nothing to do in this configuration.
type idle struct{ name, why string }

func (i idle) Name() string { return i.name }

func (i idle) Run(ctx context.Context, _ int) error {
	klog.FromContext(ctx).Info("Nothing to do", "reason", i.why)
	<-ctx.Done()
	return nil
}
