package certs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// overwrite sets the caBundle of the mutating configuration's first
// webhook, as another writer would.
func overwrite(t *testing.T, r *replica, bundle string) {
	t.Helper()
	patch := `{"webhooks":[{"name":"mpod.kb.io","clientConfig":{"caBundle":"` + b64(bundle) + `"}}]}`
	_, err := r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(context.Background(),
		MutatingWebhookConfigurationName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	r.writes()
}

func b64(s string) string { return encodeStd([]byte(s)) }

func TestOnlyTheEntriesThatDifferArePatchedAndOthersAreKept(t *testing.T) {
	data, _ := issueFresh(t, t0, DefaultCAValidity, DefaultCertValidity)
	existing := gen.Secret(SecretName, gen.SetSecretNamespace(testNS), gen.SetSecretData(data))
	m := mutatingConfig(data[CACertKey])
	m.Webhooks[1].ClientConfig.CABundle = []byte("stale")
	m.Webhooks[1].SideEffects = ptrTo(admissionregistrationv1.SideEffectClassNone)
	c := newCluster(t, existing, m, validatingConfig(data[CACertKey]), webhookCRD(convertingCRD, data[CACertKey]), noneCRD(plainCRD))
	r := newReplica(t, c, newClock())

	r.sync()
	assert.Equal(t, []string{"patch mutatingwebhookconfigurations"}, r.writes())
	assert.Empty(t, c.crdWrites())
	got := c.mutating(t)
	assert.Equal(t, data[CACertKey], got.Webhooks[1].ClientConfig.CABundle)
	assert.Equal(t, "/mutate-crr", *got.Webhooks[1].ClientConfig.Service.Path, "the rest of the entry is kept")
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *got.Webhooks[1].SideEffects)
	assert.Equal(t, []string{"mpod.kb.io", "mcrr.kb.io"}, []string{got.Webhooks[0].Name, got.Webhooks[1].Name})
	events := gen.DrainEvents(r.recorder)
	require.Len(t, events, 1)
	assert.Equal(t, "Normal CABundleInjected replaced the caBundle of webhooks mcrr.kb.io with the CA of Secret kruise-system/kruise-webhook-certs", events[0])
}

// The validating configuration as the chart renders it (four webhooks, for
// CRRs, ImagePullJobs, ImageListPullJobs and CloneSets): each gets the CA, a
// stale one alone is patched, and the rest of every entry is kept.
func TestEveryWebhookOfTheValidatingConfigurationGetsTheCA(t *testing.T) {
	v := validatingConfig(nil)
	policy := admissionregistrationv1.Ignore
	v.Webhooks = []admissionregistrationv1.ValidatingWebhook{
		{Name: "vcontainerrecreaterequest.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/validate-apps-kruise-io-containerrecreaterequest")},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-kruise-controller", Expression: "true"}}},
		{Name: "vimagepulljob-v1beta1.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/validate-apps-kruise-io-imagepulljob")},
			FailurePolicy: &policy},
		{Name: "vimagelistpulljob-v1beta1.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/validate-apps-kruise-io-imagelistpulljob")}},
		{Name: "vcloneset.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/validate-apps-kruise-io-cloneset")},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-kruise-controller", Expression: "true"}, {Name: "spec-changed", Expression: "true"}}},
	}
	c := newCluster(t, mutatingConfig(nil), v, webhookCRD(convertingCRD, nil), noneCRD(plainCRD))
	r := newReplica(t, c, newClock())
	r.sync()
	bundle := r.CABundle()
	got := c.validating(t)
	require.Len(t, got.Webhooks, 4)
	for i, w := range got.Webhooks {
		assert.Equal(t, v.Webhooks[i].Name, w.Name, "order kept")
		assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
		assert.Equal(t, *v.Webhooks[i].ClientConfig.Service.Path, *w.ClientConfig.Service.Path, w.Name)
	}
	assert.Equal(t, v.Webhooks[0].MatchConditions, got.Webhooks[0].MatchConditions)
	assert.Equal(t, v.Webhooks[3].MatchConditions, got.Webhooks[3].MatchConditions)
	assert.Equal(t, admissionregistrationv1.Ignore, *got.Webhooks[1].FailurePolicy)
	require.NoError(t, r.Check(nil))
	r.writes()
	gen.DrainEvents(r.recorder)

	// One entry overwritten: only it is patched back.
	patch := `{"webhooks":[{"name":"vcloneset.kb.io","clientConfig":{"caBundle":"` + b64("stale") + `"}}]}`
	_, err := r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(context.Background(),
		ValidatingWebhookConfigurationName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	r.writes()
	r.sync()
	assert.Equal(t, []string{"patch validatingwebhookconfigurations"}, r.writes())
	for _, w := range c.validating(t).Webhooks {
		assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
	}
	events := gen.DrainEvents(r.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "caBundle of webhooks vcloneset.kb.io was changed by someone else")
}

func ptrTo[T any](v T) *T { return &v }

func TestAnOverwrittenCABundleIsRestoredWithAGrowingDelay(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk)
	r.sync()
	r.writes()
	gen.DrainEvents(r.recorder)
	bundle := string(r.CABundle())

	// First overwrite: restored at once, with a Warning.
	overwrite(t, r, "someone else's CA")
	r.sync()
	assert.Equal(t, []string{"patch mutatingwebhookconfigurations"}, r.writes())
	assert.Equal(t, bundle, c.bundles(t)["mutating/mpod.kb.io"])
	assert.Equal(t, []string{"Warning CABundleOverwritten caBundle of webhooks mpod.kb.io was changed by someone else; " +
		"restored the CA of Secret kruise-system/kruise-webhook-certs"}, gen.DrainEvents(r.recorder))
	assert.NoError(t, r.Check(nil))

	// Overwritten again at once: the restore waits a second, and until
	// then the replica is not ready and says why.
	overwrite(t, r, "someone else's CA")
	next := r.sync()
	assert.Empty(t, r.writes())
	assert.Equal(t, time.Second, next)
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MutatingWebhookConfiguration kruise-mutating-webhook-configuration: caBundle of webhooks mpod.kb.io "+
		"was changed again by someone else after kruise restored it; next restore at")
	events := gen.DrainEvents(r.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning CABundleMismatch caBundle of webhooks mpod.kb.io was changed again")

	clk.Step(time.Second)
	r.sync()
	assert.Equal(t, []string{"patch mutatingwebhookconfigurations"}, r.writes())
	assert.NoError(t, r.Check(nil))
	events = gen.DrainEvents(r.recorder)
	require.Len(t, events, 2)
	assert.Contains(t, events[0], "Warning CABundleOverwritten")
	assert.Contains(t, events[1], "Normal CertificateProblemResolved resolved: caBundle of webhooks mpod.kb.io was changed again")

	// Next time the wait is two seconds.
	overwrite(t, r, "someone else's CA")
	assert.Equal(t, 2*time.Second, r.sync())
	clk.Step(2 * time.Second)
	r.sync()
	assert.Equal(t, []string{"patch mutatingwebhookconfigurations"}, r.writes())

	// Quiet for long enough, the next overwrite is restored at once again.
	clk.Step(restoreResetAfter)
	overwrite(t, r, "someone else's CA")
	r.sync()
	assert.Equal(t, []string{"patch mutatingwebhookconfigurations"}, r.writes())
}

func TestOverwrittenConversionCABundleIsRestored(t *testing.T) {
	c := newCluster(t, targets()...)
	r := newReplica(t, c, newClock())
	r.sync()
	c.crdWrites()
	crd := c.crd(t, convertingCRD)
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("placeholder")
	_, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.crdWrites()

	r.sync()
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	assert.Equal(t, string(r.CABundle()), c.bundles(t)["crd/"+convertingCRD])
	assert.Equal(t, "/convert", *c.crd(t, convertingCRD).Spec.Conversion.Webhook.ClientConfig.Service.Path)
}

func TestAMissingConfigurationIsReportedAndTheOthersStillGetTheCA(t *testing.T) {
	c := newCluster(t, mutatingConfig(nil), webhookCRD(convertingCRD, nil), noneCRD(plainCRD))
	r := newReplica(t, c, newClock())
	r.sync()

	assert.Equal(t, []string{"create secrets", "patch mutatingwebhookconfigurations"}, r.writes())
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	assert.Equal(t, r.CABundle(), c.mutating(t).Webhooks[0].ClientConfig.CABundle)
	err := r.Check(nil)
	require.Error(t, err)
	assert.Equal(t, "ValidatingWebhookConfiguration kruise-validating-webhook-configuration: does not exist; "+
		"the API server cannot call its webhooks until it is created with its caBundle", err.Error())
	_, err = r.GetCertificate(nil)
	assert.NoError(t, err, "the certificate is served meanwhile")
	warnings := warningsOf(gen.DrainEvents(r.recorder))
	assert.Equal(t, []string{"Warning ObjectNotFound does not exist; the API server cannot call its webhooks until it is created with its caBundle"}, warnings)

	// Reported once, not at every check.
	r.sync()
	assert.Empty(t, gen.DrainEvents(r.recorder))

	// Created later: it gets the CA and the replica becomes ready.
	_, err = r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), validatingConfig(nil), metav1.CreateOptions{})
	require.NoError(t, err)
	r.writes()
	r.sync()
	assert.Equal(t, []string{"patch validatingwebhookconfigurations"}, r.writes())
	assert.NoError(t, r.Check(nil))
	events := gen.DrainEvents(r.recorder)
	assert.Contains(t, events, "Normal CertificateProblemResolved resolved: does not exist; the API server cannot call its webhooks until it is created with its caBundle")
}

func warningsOf(events []string) []string {
	var out []string
	for _, e := range events {
		if len(e) > 8 && e[:8] == "Warning " {
			out = append(out, e)
		}
	}
	return out
}

// A failing patch (here: no RBAC) leaves the replica unready and says so.
func TestAFailingPatchIsAProblem(t *testing.T) {
	c := newCluster(t, targets()...)
	r := newReplica(t, c, newClock())
	r.client.PrependReactor("patch", "validatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(admissionregistrationv1.Resource("validatingwebhookconfigurations"), ValidatingWebhookConfigurationName, errors.New("RBAC"))
	})
	next, failed := r.Manager.sync(r.ctx)
	assert.True(t, failed)
	assert.Equal(t, DefaultResync, next, "Run shortens it by its backoff")
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ValidatingWebhookConfiguration kruise-validating-webhook-configuration: writing the caBundle of webhooks vcrr.kb.io: ")
	assert.Contains(t, err.Error(), "forbidden")
}

// A short API server hiccup on an object found fine before does not take
// the replica out of service; a lasting one does.
func TestAnAPIErrorOnAnObjectFoundFineRecentlyIsTransient(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk)
	r.sync()
	require.NoError(t, r.Check(nil))

	failing := true
	r.client.PrependReactor("get", "mutatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		return false, nil, nil
	})
	clk.Step(time.Minute)
	r.sync()
	assert.NoError(t, r.Check(nil))
	st := r.Status()
	require.Len(t, st.Problems, 1)
	assert.True(t, st.Problems[0].Transient)
	assert.Equal(t, ReasonAPIError, st.Problems[0].Reason)

	clk.Step(DefaultResync)
	r.sync()
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MutatingWebhookConfiguration kruise-mutating-webhook-configuration: reading: etcd leader changed")

	failing = false
	r.sync()
	assert.NoError(t, r.Check(nil))
}

// An object that cannot be read keeps the problem found before: a read
// error does not make a broken object look fine.
func TestAnUnreadableObjectKeepsItsEarlierProblem(t *testing.T) {
	c := newCluster(t, mutatingConfig(nil), webhookCRD(convertingCRD, nil), noneCRD(plainCRD))
	r := newReplica(t, c, newClock())
	r.sync()
	require.Error(t, r.Check(nil))
	r.client.PrependReactor("get", "validatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
	})
	r.sync()
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ValidatingWebhookConfiguration kruise-validating-webhook-configuration: does not exist")
}

// refRecorder keeps the object each Event is recorded on.
type refRecorder struct {
	record.FakeRecorder
	refs []corev1.ObjectReference
}

func (r *refRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.refs = append(r.refs, *obj.(*corev1.ObjectReference))
}

func (r *refRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	r.Event(obj, eventtype, reason, format)
}

func TestEventsAreRecordedOnTheObjectAtFault(t *testing.T) {
	rec := &refRecorder{}
	c := newCluster(t, mutatingConfig(nil), webhookCRD(convertingCRD, nil), noneCRD(plainCRD))
	r := newReplica(t, c, newClock(), func(cfg *Config) { cfg.Recorder = rec })
	r.sync()
	sec := c.secret(t)
	assert.Equal(t, []corev1.ObjectReference{
		{Kind: "Secret", APIVersion: "v1", Namespace: testNS, Name: SecretName, UID: sec.UID},
		{Kind: "MutatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1", Name: MutatingWebhookConfigurationName, UID: "uid-mutating"},
		{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1", Name: convertingCRD, UID: "uid-" + convertingCRD},
		{Kind: "ValidatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1", Name: ValidatingWebhookConfigurationName},
	}, rec.refs)
}
