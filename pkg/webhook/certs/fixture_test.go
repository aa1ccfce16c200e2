package certs

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

const (
	testNS        = "kruise-system"
	convertingCRD = "nodeimages.apps.kruise.io"
	plainCRD      = "imagepulljobs.apps.kruise.io"
)

var (
	t0          = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secretsGVR  = corev1.SchemeGroupVersion.WithResource("secrets")
	mutatingGVR = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
)

// rvTracker gives the fake clientsets the API server's optimistic
// concurrency, which the plain tracker lacks: every write sets a new
// resourceVersion, and an update carrying another one than the stored
// object's fails with a Conflict. Several clientsets can share it, as
// several replicas share one API server.
type rvTracker struct {
	clienttesting.ObjectTracker
	mu   sync.Mutex
	next int
}

func (t *rvTracker) stamp(obj runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	t.next++
	acc.SetResourceVersion(strconv.Itoa(t.next))
	return nil
}

func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj = obj.DeepCopyObject()
	if err := t.stamp(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	stored, err := t.ObjectTracker.Get(gvr, ns, acc.GetName())
	if err != nil {
		return err
	}
	storedAcc, err := meta.Accessor(stored)
	if err != nil {
		return err
	}
	if rv := acc.GetResourceVersion(); rv != "" && rv != storedAcc.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), acc.GetName(),
			&rvError{sent: rv, stored: storedAcc.GetResourceVersion()})
	}
	obj = obj.DeepCopyObject()
	if err := t.stamp(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj = obj.DeepCopyObject()
	if err := t.stamp(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

type rvError struct{ sent, stored string }

func (e *rvError) Error() string {
	return "the object has been modified: resourceVersion " + e.sent + " is not " + e.stored
}

// cluster is one fake API server: its core objects (shared by every
// replica's clientset) and its CRDs.
type cluster struct {
	tracker *rvTracker
	crds    *apiextensionsfake.Clientset
	first   *fake.Clientset
}

func newCluster(t *testing.T, objs ...runtime.Object) *cluster {
	t.Helper()
	var core, ext []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
			ext = append(ext, o)
		} else {
			core = append(core, o)
		}
	}
	first := fake.NewClientset()
	c := &cluster{tracker: &rvTracker{ObjectTracker: first.Tracker()}, crds: apiextensionsfake.NewClientset(ext...), first: first}
	c.wire(first)
	for _, o := range core {
		o = o.DeepCopyObject()
		require.NoError(t, c.tracker.stamp(o))
		require.NoError(t, c.tracker.Add(o))
	}
	return c
}

func (c *cluster) wire(cs *fake.Clientset) {
	cs.PrependReactor("*", "*", clienttesting.ObjectReaction(c.tracker))
	cs.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := c.tracker.Watch(action.GetResource(), action.GetNamespace())
		return true, w, err
	})
}

// client returns a clientset of its own (its own action log and reactors)
// on the cluster's objects: one per replica.
func (c *cluster) client() *fake.Clientset {
	cs := fake.NewClientset()
	c.wire(cs)
	return cs
}

func (c *cluster) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	obj, err := c.tracker.Get(secretsGVR, testNS, SecretName)
	require.NoError(t, err)
	return obj.(*corev1.Secret)
}

func (c *cluster) mutating(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	obj, err := c.tracker.Get(mutatingGVR, "", MutatingWebhookConfigurationName)
	require.NoError(t, err)
	return obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
}

func (c *cluster) validating(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	obj, err := c.tracker.Get(admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), "", ValidatingWebhookConfigurationName)
	require.NoError(t, err)
	return obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
}

func (c *cluster) crd(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return crd
}

// bundles returns every caBundle the configured objects carry, by place.
func (c *cluster) bundles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range c.mutating(t).Webhooks {
		out["mutating/"+w.Name] = string(w.ClientConfig.CABundle)
	}
	for _, w := range c.validating(t).Webhooks {
		out["validating/"+w.Name] = string(w.ClientConfig.CABundle)
	}
	out["crd/"+convertingCRD] = string(c.crd(t, convertingCRD).Spec.Conversion.Webhook.ClientConfig.CABundle)
	return out
}

func serviceRef(path string) *admissionregistrationv1.ServiceReference {
	return &admissionregistrationv1.ServiceReference{Namespace: testNS, Name: ServiceName, Path: &path}
}

func mutatingConfig(bundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingWebhookConfigurationName, UID: "uid-mutating"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "mpod.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/mutate-pod"), CABundle: bundle}},
			{Name: "mcrr.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/mutate-crr"), CABundle: bundle}},
		},
	}
}

func validatingConfig(bundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingWebhookConfigurationName, UID: "uid-validating"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "vcrr.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: serviceRef("/validate-crr"), CABundle: bundle}},
		},
	}
}

func webhookCRD(name string, bundle []byte) *apiextensionsv1.CustomResourceDefinition {
	path := "/convert"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "apps.kruise.io",
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						Service:  &apiextensionsv1.ServiceReference{Namespace: testNS, Name: ServiceName, Path: &path, Port: ptrTo(int32(443))},
						CABundle: bundle,
					},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}
}

func noneCRD(name string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:      "apps.kruise.io",
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
		},
	}
}

// targets are the objects an install creates, without caBundles (plainCRD
// is not configured: it is left alone).
func targets() []runtime.Object {
	return []runtime.Object{mutatingConfig(nil), validatingConfig(nil), webhookCRD(convertingCRD, nil), noneCRD(plainCRD)}
}

// replica is one controller replica's Manager with its own clientset,
// recorder and context.
type replica struct {
	*Manager
	client   *fake.Clientset
	recorder *record.FakeRecorder
	ctx      context.Context
}

func newReplica(t *testing.T, c *cluster, clk *testingclock.FakeClock, mods ...func(*Config)) *replica {
	t.Helper()
	cs := c.client()
	rec := record.NewFakeRecorder(200)
	cfg := Config{
		Namespace: testNS,
		CRDs:      []string{convertingCRD},
		Client:    cs,
		CRDClient: c.crds,
		Recorder:  rec,
		Clock:     clk,
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	return &replica{Manager: m, client: cs, recorder: rec, ctx: ctx}
}

func (r *replica) sync() time.Duration {
	next, _ := r.Manager.sync(r.ctx)
	return next
}

// writes lists the write actions of r's clientset as "verb resource" and
// forgets them.
func (r *replica) writes() []string {
	var out []string
	for _, a := range r.client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	r.client.ClearActions()
	return out
}

// crdWrites lists the write actions on CRDs of the cluster and forgets them.
func (c *cluster) crdWrites() []string {
	var out []string
	for _, a := range c.crds.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	c.crds.ClearActions()
	return out
}

// served returns the leaf GetCertificate hands out.
func (r *replica) served(t *testing.T) *x509.Certificate {
	t.Helper()
	cert, err := r.GetCertificate(nil)
	require.NoError(t, err)
	require.NotNil(t, cert.Leaf)
	return cert.Leaf
}

func parseCerts(t *testing.T, pemBytes []byte) []*x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(pemBytes)
	require.NoError(t, err)
	return certs
}

func newClock() *testingclock.FakeClock { return testingclock.NewFakeClock(t0) }

func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
