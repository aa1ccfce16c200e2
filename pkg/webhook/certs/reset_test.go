package certs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestResetConversionTurnsKruisesWebhookBackToNone(t *testing.T) {
	elsewhere := webhookCRD("imagelistpulljobs.apps.kruise.io", []byte("ca"))
	elsewhere.Spec.Conversion.Webhook.ClientConfig.Service.Name = "someone-elses-converter"
	c := newCluster(t, webhookCRD(convertingCRD, []byte("ca")), noneCRD(plainCRD), elsewhere)
	_, ctx := ktesting.NewTestContext(t)

	reset, err := ResetConversion(ctx, c.crds, testNS, ServiceName,
		[]string{convertingCRD, plainCRD, elsewhere.Name, "gone.apps.kruise.io"}, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{convertingCRD}, reset)
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites(), "only kruise's conversion is reset")
	conv := c.crd(t, convertingCRD).Spec.Conversion
	assert.Equal(t, apiextensionsv1.NoneConverter, conv.Strategy)
	assert.Nil(t, conv.Webhook)
	assert.Equal(t, "someone-elses-converter", c.crd(t, elsewhere.Name).Spec.Conversion.Webhook.ClientConfig.Service.Name)

	// Once more: nothing left to do.
	reset, err = ResetConversion(ctx, c.crds, testNS, ServiceName, []string{convertingCRD}, t0)
	require.NoError(t, err)
	assert.Empty(t, reset)
	assert.Empty(t, c.crdWrites())
}

func TestResetConversionReportsAFailureAndGoesOn(t *testing.T) {
	c := newCluster(t, webhookCRD(convertingCRD, nil), webhookCRD("imagepulljobs.apps.kruise.io", nil))
	c.crds.PrependReactor("patch", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchAction).GetName() == convertingCRD {
			return true, nil, apierrors.NewForbidden(apiextensionsv1.Resource("customresourcedefinitions"), convertingCRD, errors.New("RBAC"))
		}
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	reset, err := ResetConversion(context.WithoutCancel(ctx), c.crds, testNS, ServiceName, []string{convertingCRD, "imagepulljobs.apps.kruise.io"}, t0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resetting the conversion of CRD nodeimages.apps.kruise.io to strategy None: ")
	assert.Equal(t, []string{"imagepulljobs.apps.kruise.io"}, reset)
}

// A CRD changed between the read and the patch (cainjector writing its caBundle, as seen in CI) is
// read again and reset: a one-shot hook must not fail on it.
func TestResetConversionRetriesAConflict(t *testing.T) {
	c := newCluster(t, webhookCRD(convertingCRD, nil))
	conflicts := 0
	c.crds.PrependReactor("patch", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(apiextensionsv1.Resource("customresourcedefinitions"), convertingCRD, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	reset, err := ResetConversion(ctx, c.crds, testNS, ServiceName, []string{convertingCRD}, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{convertingCRD}, reset)
	assert.Equal(t, 1, conflicts)
	assert.Equal(t, apiextensionsv1.NoneConverter, c.crd(t, convertingCRD).Spec.Conversion.Strategy)
}

// The replicas still running when the chart's pre-delete hook resets the
// CRD leave it alone (they would otherwise switch it back at once); a
// replica started after the reset (kruise installed again) switches it back
// and removes the annotation, and the old replica does not fight it.
func TestAResetIsLeftAloneByReplicasStartedBeforeIt(t *testing.T) {
	clk := newClock()
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), installedCRD(convertingCRD))
	old := newReplica(t, c, clk)
	old.sync()
	c.crdWrites()
	gen.DrainEvents(old.recorder)

	clk.Step(time.Hour)
	reset, err := ResetConversion(old.ctx, c.crds, testNS, ServiceName, []string{convertingCRD}, clk.Now())
	require.NoError(t, err)
	require.Equal(t, []string{convertingCRD}, reset)
	c.crdWrites()
	crd := c.crd(t, convertingCRD)
	assert.Equal(t, clk.Now().UTC().Format(time.RFC3339Nano), crd.Annotations[ConversionResetAnnotation])
	assert.Equal(t, apiextensionsv1.NoneConverter, crd.Spec.Conversion.Strategy)

	for range 3 {
		clk.Step(time.Second)
		old.sync()
	}
	assert.Empty(t, c.crdWrites(), "a replica started before the reset leaves it alone")
	assert.NoError(t, old.Check(nil))
	assert.Empty(t, gen.DrainEvents(old.recorder))

	clk.Step(time.Minute)
	fresh := newReplica(t, c, clk)
	fresh.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	crd = c.crd(t, convertingCRD)
	requireKruiseConversion(t, crd, fresh.CABundle())
	assert.NotContains(t, crd.Annotations, ConversionResetAnnotation)
	old.sync()
	fresh.sync()
	assert.Empty(t, c.crdWrites())
}

// An annotation left from a reset before this replica started, on a CRD
// already converting through kruise, is removed.
func TestAStaleResetAnnotationIsRemoved(t *testing.T) {
	clk := newClock()
	crd := webhookCRD(convertingCRD, nil)
	crd.Annotations = map[string]string{ConversionResetAnnotation: t0.Add(-time.Hour).Format(time.RFC3339Nano)}
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), crd)
	r := newReplica(t, c, clk)
	r.sync()
	r.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	assert.NotContains(t, c.crd(t, convertingCRD).Annotations, ConversionResetAnnotation)
}
