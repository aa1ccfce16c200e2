package certs

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/test/unit/gen"
)

const injectKey = "cert-manager.io/inject-ca-from"

func externalSetup(annotations map[string]string, bundle []byte) ConversionSetup {
	return ConversionSetup{Namespace: testNS, Service: ServiceName, CRDs: []string{convertingCRD}, Annotations: annotations, CABundle: bundle}
}

func TestSetupConversionSwitchesTheCRDAndAnnotatesItOnce(t *testing.T) {
	c := newCluster(t, installedCRD(convertingCRD), noneCRD(plainCRD))
	_, ctx := ktesting.NewTestContext(t)
	setup := externalSetup(map[string]string{injectKey: testNS + "/" + SecretName}, nil)

	changed, err := SetupConversion(ctx, c.crds, setup, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{convertingCRD}, changed)
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	crd := c.crd(t, convertingCRD)
	requireKruiseConversion(t, crd, nil)
	assert.Equal(t, testNS+"/"+SecretName, crd.Annotations[injectKey])
	assert.Equal(t, injectKey, crd.Annotations[ConversionAnnotationsAnnotation])
	assert.Equal(t, t0.UTC().Format(time.RFC3339Nano), crd.Annotations[ConversionSetupAnnotation])
	assert.Equal(t, "v0.19.0", crd.Annotations["controller-gen.kubebuilder.io/version"], "other annotations are left alone")
	assert.Equal(t, apiextensionsv1.NoneConverter, c.crd(t, plainCRD).Spec.Conversion.Strategy, "a CRD not named is left alone")

	// cainjector fills the caBundle; a second set-up (the next helm upgrade) keeps it and writes nothing.
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("injected")
	_, err = c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.crdWrites()
	changed, err = SetupConversion(ctx, c.crds, setup, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Empty(t, changed)
	assert.Empty(t, c.crdWrites())
	assert.Equal(t, "injected", string(c.crd(t, convertingCRD).Spec.Conversion.Webhook.ClientConfig.CABundle))
}

// A conflict with another writer of the CRD is read again and set up, not reported.
func TestSetupConversionRetriesAConflict(t *testing.T) {
	c := newCluster(t, installedCRD(convertingCRD))
	conflicts := 0
	c.crds.PrependReactor("patch", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(apiextensionsv1.Resource("customresourcedefinitions"), convertingCRD, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	changed, err := SetupConversion(ctx, c.crds, externalSetup(nil, nil), t0)
	require.NoError(t, err)
	assert.Equal(t, []string{convertingCRD}, changed)
	assert.Equal(t, 1, conflicts)
	requireKruiseConversion(t, c.crd(t, convertingCRD), nil)
}

func TestSetupConversionReplacesOnlyTheAnnotationsItSet(t *testing.T) {
	crd := installedCRD(convertingCRD)
	crd.Annotations["team.example.com/owner"] = "platform"
	c := newCluster(t, crd)
	_, ctx := ktesting.NewTestContext(t)
	_, err := SetupConversion(ctx, c.crds, externalSetup(map[string]string{injectKey: "kruise-system/old", "a.example.com/x": "1"}, nil), t0)
	require.NoError(t, err)

	_, err = SetupConversion(ctx, c.crds, externalSetup(map[string]string{injectKey: "kruise-system/new"}, nil), t0.Add(time.Hour))
	require.NoError(t, err)
	got := c.crd(t, convertingCRD).Annotations
	assert.Equal(t, "kruise-system/new", got[injectKey])
	assert.NotContains(t, got, "a.example.com/x", "an annotation the previous set-up put there and this one has not is removed")
	assert.Equal(t, "platform", got["team.example.com/owner"], "an annotation the set-up never put there stays")
	assert.Equal(t, injectKey, got[ConversionAnnotationsAnnotation])
	assert.Equal(t, t0.Add(time.Hour).UTC().Format(time.RFC3339Nano), got[ConversionSetupAnnotation])
}

func TestSetupConversionWritesAGivenCABundle(t *testing.T) {
	c := newCluster(t, webhookCRD(convertingCRD, []byte("old CA")))
	_, ctx := ktesting.NewTestContext(t)
	changed, err := SetupConversion(ctx, c.crds, externalSetup(nil, []byte("chart CA")), t0)
	require.NoError(t, err)
	assert.Equal(t, []string{convertingCRD}, changed)
	crd := c.crd(t, convertingCRD)
	requireKruiseConversion(t, crd, []byte("chart CA"))
	assert.NotContains(t, crd.Annotations, ConversionAnnotationsAnnotation, "no annotations given, none listed")
}

func TestSetupConversionNamesAMissingCRDAndGoesOn(t *testing.T) {
	c := newCluster(t, installedCRD(convertingCRD))
	_, ctx := ktesting.NewTestContext(t)
	setup := externalSetup(nil, nil)
	setup.CRDs = []string{"gone.apps.kruise.io", convertingCRD}
	changed, err := SetupConversion(ctx, c.crds, setup, t0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CRD gone.apps.kruise.io does not exist: install kruise's CRDs first")
	assert.Equal(t, []string{convertingCRD}, changed)
}

func TestSetupConversionRefusesKruisesOwnAnnotations(t *testing.T) {
	c := newCluster(t, installedCRD(convertingCRD))
	_, ctx := ktesting.NewTestContext(t)
	_, err := SetupConversion(ctx, c.crds, externalSetup(map[string]string{ConversionSetupAnnotation: "x"}, nil), t0)
	require.ErrorContains(t, err, "annotation "+ConversionSetupAnnotation+" is kruise's own bookkeeping")
	assert.Empty(t, c.crdWrites())
}

// Switching between kruise's own certificates and external ones with a helm
// upgrade: a replica with kruise's certificates started before the set-up
// is being replaced and leaves the CRD to cainjector; one started after it
// (switched back) takes the CRD over and removes cainjector's annotation, so
// the two never fight over the caBundle.
func TestManagedReplicasAndTheExternalSetUp(t *testing.T) {
	clk := newClock()
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), installedCRD(convertingCRD))
	old := newReplica(t, c, clk)
	old.sync()
	c.crdWrites()
	gen.DrainEvents(old.recorder)

	clk.Step(time.Hour)
	_, err := SetupConversion(old.ctx, c.crds, externalSetup(map[string]string{injectKey: testNS + "/" + SecretName}, nil), clk.Now())
	require.NoError(t, err)
	crd := c.crd(t, convertingCRD)
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("cainjector's CA")
	_, err = c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(old.ctx, crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.crdWrites()
	for range 3 {
		clk.Step(time.Second)
		old.sync()
	}
	assert.Empty(t, c.crdWrites(), "a replica started before the set-up leaves the CRD alone")
	assert.Equal(t, "cainjector's CA", string(c.crd(t, convertingCRD).Spec.Conversion.Webhook.ClientConfig.CABundle))

	clk.Step(time.Minute)
	fresh := newReplica(t, c, clk)
	fresh.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	crd = c.crd(t, convertingCRD)
	requireKruiseConversion(t, crd, fresh.CABundle())
	for _, k := range []string{injectKey, ConversionAnnotationsAnnotation, ConversionSetupAnnotation} {
		assert.NotContains(t, crd.Annotations, k)
	}
	assert.Equal(t, "v0.19.0", crd.Annotations["controller-gen.kubebuilder.io/version"])
	fresh.sync()
	assert.Empty(t, c.crdWrites())
}

func TestResetConversionRemovesTheSetUpAnnotations(t *testing.T) {
	c := newCluster(t, installedCRD(convertingCRD))
	_, ctx := ktesting.NewTestContext(t)
	_, err := SetupConversion(ctx, c.crds, externalSetup(map[string]string{injectKey: testNS + "/" + SecretName}, nil), t0)
	require.NoError(t, err)
	c.crdWrites()

	reset, err := ResetConversion(ctx, c.crds, testNS, ServiceName, []string{convertingCRD}, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{convertingCRD}, reset)
	crd := c.crd(t, convertingCRD)
	assert.Equal(t, apiextensionsv1.NoneConverter, crd.Spec.Conversion.Strategy)
	assert.Nil(t, crd.Spec.Conversion.Webhook)
	for _, k := range []string{injectKey, ConversionAnnotationsAnnotation, ConversionSetupAnnotation} {
		assert.NotContains(t, crd.Annotations, k, "cainjector must not write into a CRD that no longer calls a webhook")
	}
	assert.Equal(t, "v0.19.0", crd.Annotations["controller-gen.kubebuilder.io/version"])
}
