package certs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// installedCRD is a CRD as an install creates it: two versions, strategy
// None (the API server's default), nothing about a webhook.
func installedCRD(name string) *apiextensionsv1.CustomResourceDefinition {
	crd := noneCRD(name)
	crd.Annotations = map[string]string{"controller-gen.kubebuilder.io/version": "v0.19.0"}
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: "NodeImage", Plural: "nodeimages"}
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1alpha1", Served: true}, {Name: "v1beta1", Served: true, Storage: true},
	}
	return crd
}

// requireKruiseConversion checks that crd converts through kruise's /convert
// with bundle.
func requireKruiseConversion(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, bundle []byte) {
	t.Helper()
	conv := crd.Spec.Conversion
	require.NotNil(t, conv)
	assert.Equal(t, apiextensionsv1.WebhookConverter, conv.Strategy)
	require.NotNil(t, conv.Webhook)
	assert.Equal(t, []string{"v1"}, conv.Webhook.ConversionReviewVersions)
	cc := conv.Webhook.ClientConfig
	require.NotNil(t, cc)
	assert.Nil(t, cc.URL)
	require.NotNil(t, cc.Service)
	assert.Equal(t, apiextensionsv1.ServiceReference{Namespace: testNS, Name: ServiceName, Path: ptrTo("/convert"), Port: ptrTo(int32(443))}, *cc.Service)
	assert.Equal(t, string(bundle), string(cc.CABundle))
}

func TestManagedSwitchesACRDWithStrategyNoneToTheWebhook(t *testing.T) {
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), installedCRD(convertingCRD), noneCRD(plainCRD))
	r := newReplica(t, c, newClock())
	r.sync()

	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites(), "one patch, of the configured CRD only")
	crd := c.crd(t, convertingCRD)
	requireKruiseConversion(t, crd, r.CABundle())
	assert.Equal(t, installedCRD(convertingCRD).Spec.Versions, crd.Spec.Versions, "the rest of the CRD is left alone")
	assert.Equal(t, "v0.19.0", crd.Annotations["controller-gen.kubebuilder.io/version"])
	assert.Equal(t, apiextensionsv1.NoneConverter, c.crd(t, plainCRD).Spec.Conversion.Strategy, "a CRD not configured is left alone")
	assert.NoError(t, r.Check(nil), "ready: the Manager wrote everything itself, nothing waits for a served /convert")
	assert.Contains(t, gen.DrainEvents(r.recorder), "Normal ConversionWebhookConfigured switched spec.conversion from strategy None to Webhook "+
		"(Service kruise-system/kruise-webhook-service, path /convert) with the CA of Secret kruise-system/kruise-webhook-certs")

	// Idempotent: nothing differs any more.
	r.sync()
	assert.Empty(t, c.crdWrites())
	assert.Empty(t, gen.DrainEvents(r.recorder))
}

// Every part of the block that is not kruise's is rewritten in one patch:
// a URL (exclusive with service), another Service, port or path, other
// review versions.
func TestManagedRewritesAConversionBlockPointingElsewhere(t *testing.T) {
	crd := webhookCRD(convertingCRD, []byte("someone's CA"))
	crd.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1beta1", "v1"}
	crd.Spec.Conversion.Webhook.ClientConfig.Service = &apiextensionsv1.ServiceReference{Namespace: "other", Name: "converter", Port: ptrTo(int32(8443))}
	url := "https://converter.example/convert"
	withURL := webhookCRD("imagelistpulljobs.apps.kruise.io", nil)
	withURL.Spec.Conversion.Webhook.ClientConfig.Service = nil
	withURL.Spec.Conversion.Webhook.ClientConfig.URL = &url
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), crd, withURL)
	r := newReplica(t, c, newClock(), func(cfg *Config) { cfg.CRDs = []string{convertingCRD, withURL.Name} })
	r.sync()

	assert.Equal(t, []string{"patch customresourcedefinitions", "patch customresourcedefinitions"}, c.crdWrites())
	requireKruiseConversion(t, c.crd(t, convertingCRD), r.CABundle())
	requireKruiseConversion(t, c.crd(t, withURL.Name), r.CABundle())
	assert.NoError(t, r.Check(nil))
	events := gen.DrainEvents(r.recorder)
	assert.Contains(t, events, "Normal ConversionWebhookConfigured set spec.conversion (conversionReviewVersions [v1beta1 v1], not [v1]; "+
		"service other/converter:8443/, not kruise-system/kruise-webhook-service:443/convert; caBundle differs from ca-cert.pem of the Secret) "+
		"to kruise's conversion webhook with the CA of Secret kruise-system/kruise-webhook-certs")
	assert.Contains(t, events, "Normal ConversionWebhookConfigured set spec.conversion (calls a URL; service none, not "+
		"kruise-system/kruise-webhook-service:443/convert; caBundle is empty) to kruise's conversion webhook with the CA of Secret kruise-system/kruise-webhook-certs")
}

// A CRD whose strategy is Webhook without a clientConfig, one that does not
// exist: the first is given the block, the second reported.
func TestManagedFixesACRDWithoutClientConfigAndReportsAMissingOne(t *testing.T) {
	broken := webhookCRD("broken.apps.kruise.io", nil)
	broken.Spec.Conversion.Webhook.ClientConfig = nil
	c := newCluster(t, append(targets(), broken)...)
	r := newReplica(t, c, newClock(), func(cfg *Config) {
		cfg.CRDs = []string{convertingCRD, "broken.apps.kruise.io", "gone.apps.kruise.io"}
	})
	r.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions", "patch customresourcedefinitions"}, c.crdWrites())
	requireKruiseConversion(t, c.crd(t, "broken.apps.kruise.io"), r.CABundle())
	err := r.Check(nil)
	require.Error(t, err)
	assert.Equal(t, "CustomResourceDefinition gone.apps.kruise.io: does not exist; its conversion webhook cannot be given the CA", err.Error())
}

// Two replicas on one Secret want the same block: after the first write
// neither writes again, however their checks interleave.
func TestTwoReplicasDoNotFightOverTheConversionBlock(t *testing.T) {
	clk := newClock()
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), installedCRD(convertingCRD))
	a, b := newReplica(t, c, clk), newReplica(t, c, clk)
	a.sync()
	b.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	for range 5 {
		clk.Step(DefaultResync)
		b.sync()
		a.sync()
	}
	assert.Empty(t, c.crdWrites())
	assert.Empty(t, b.writes())
	assert.Equal(t, a.CABundle(), b.CABundle())
	requireKruiseConversion(t, c.crd(t, convertingCRD), a.CABundle())
	assert.NoError(t, a.Check(nil))
	assert.NoError(t, b.Check(nil))
}

// Re-applying an install that says strategy None (a CRD manifest carrying
// spec.conversion) is undone at once with a Warning, then with a growing
// delay, as for the webhook configurations.
func TestAConversionBlockTurnedBackToNoneIsRestored(t *testing.T) {
	clk := newClock()
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), installedCRD(convertingCRD))
	r := newReplica(t, c, clk)
	r.sync()
	c.crdWrites()
	gen.DrainEvents(r.recorder)
	toNone := func() {
		t.Helper()
		_, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Patch(context.Background(), convertingCRD, types.MergePatchType,
			[]byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		c.crdWrites()
	}

	toNone()
	r.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	requireKruiseConversion(t, c.crd(t, convertingCRD), r.CABundle())
	assert.Equal(t, []string{"Warning CABundleOverwritten spec.conversion was changed by someone else; restored kruise's conversion webhook " +
		"with the CA of Secret kruise-system/kruise-webhook-certs"}, gen.DrainEvents(r.recorder))

	toNone()
	assert.Equal(t, time.Second, r.sync())
	assert.Empty(t, c.crdWrites())
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CustomResourceDefinition nodeimages.apps.kruise.io: spec.conversion was changed again by someone else after kruise restored it")
	clk.Step(time.Second)
	r.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	assert.NoError(t, r.Check(nil))
}

// ModeExternal writes nothing into a CRD: one with strategy None is fine
// (it calls no webhook), one with strategy Webhook but no clientConfig is
// reported.
func TestExternalLeavesCRDsAlone(t *testing.T) {
	iss := newIssuer(t)
	data := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	broken := webhookCRD("broken.apps.kruise.io", nil)
	broken.Spec.Conversion.Webhook.ClientConfig = nil
	c := newCluster(t, append(injected(iss.ca.certPEM), installedCRD("imagelistpulljobs.apps.kruise.io"), broken, externalSecret(data))...)
	r := newReplica(t, c, newClock(), external, func(cfg *Config) {
		cfg.CRDs = []string{convertingCRD, "imagelistpulljobs.apps.kruise.io"}
	})
	r.sync()
	assert.Empty(t, c.crdWrites())
	assert.NoError(t, r.Check(nil))

	r = newReplica(t, c, newClock(), external, func(cfg *Config) { cfg.CRDs = []string{"broken.apps.kruise.io"} })
	r.sync()
	assert.Empty(t, c.crdWrites())
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CustomResourceDefinition broken.apps.kruise.io: conversion strategy is Webhook but spec.conversion.webhook.clientConfig is not set")
}
