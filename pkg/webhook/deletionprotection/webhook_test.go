package deletionprotection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

type fakeLookups struct {
	pods    []corev1.Pod
	claims  []corev1.PersistentVolumeClaim
	objects []metav1.PartialObjectMetadata
	err     error
	listed  []schema.GroupVersionResource
}

func (f *fakeLookups) Pods(context.Context, string) ([]corev1.Pod, error) { return f.pods, f.err }
func (f *fakeLookups) Claims(context.Context, string) ([]corev1.PersistentVolumeClaim, error) {
	return f.claims, f.err
}
func (f *fakeLookups) Objects(_ context.Context, gvr schema.GroupVersionResource) ([]metav1.PartialObjectMetadata, error) {
	f.listed = append(f.listed, gvr)
	return f.objects, f.err
}

func deleteReview(t *testing.T, group, resource string, old any) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		Operation: admissionv1.Delete,
		Resource:  metav1.GroupVersionResource{Group: group, Version: "v1", Resource: resource},
		OldObject: runtime.RawExtension{Raw: raw},
		UserInfo:  authenticationv1.UserInfo{Username: "alice"},
	}
}

func namespace(value string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{Label: value}}}
}

func crd(value string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "foos.example.com", Labels: map[string]string{Label: value}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "foos"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true}, {Name: "v1", Served: true, Storage: true}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
	}
}

func newAdmitter(t *testing.T, l Lookups, crdCascading bool) (*admitter, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	wh, err := Webhook(Options{Lookups: l, CRDCascading: crdCascading, Metrics: reg})
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)
	return wh.Admitter.(*admitter), reg
}

func TestAdmitNamespace(t *testing.T) {
	running := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	bound := corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	for _, tc := range []struct {
		name    string
		ns      *corev1.Namespace
		lookups *fakeLookups
		reason  string
		errored bool
	}{
		{name: "Cascading with a running pod", ns: namespace(Cascading), lookups: &fakeLookups{pods: []corev1.Pod{running}}, reason: ReasonNamespaceNotEmpty},
		{name: "Cascading with a Bound claim", ns: namespace(Cascading), lookups: &fakeLookups{claims: []corev1.PersistentVolumeClaim{bound}}, reason: ReasonNamespaceNotEmpty},
		{name: "Cascading, empty", ns: namespace(Cascading), lookups: &fakeLookups{}},
		{name: "Always", ns: namespace(Always), lookups: &fakeLookups{}, reason: ReasonAlways},
		{name: "another value", ns: namespace("Never"), lookups: &fakeLookups{pods: []corev1.Pod{running}}},
		{name: "already deleting", ns: func() *corev1.Namespace { n := namespace(Cascading); n.DeletionTimestamp = &deletedAt; return n }(),
			lookups: &fakeLookups{pods: []corev1.Pod{running}}},
		{name: "a read fails: refused as an error, not admitted", ns: namespace(Cascading), lookups: &fakeLookups{err: errors.New("boom")}, errored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newAdmitter(t, tc.lookups, false)
			res := a.Admit(context.Background(), deleteReview(t, "", "namespaces", tc.ns))
			if tc.errored {
				require.Error(t, res.Err)
				assert.Contains(t, res.Err.Error(), "boom")
				return
			}
			require.NoError(t, res.Err)
			assert.Equal(t, tc.reason == "", res.Allowed, res.Message)
			assert.Equal(t, tc.reason, res.Reason)
			if tc.reason != "" {
				assert.Contains(t, res.Message, MessagePrefix)
				assert.Contains(t, res.Message, "kubectl label namespaces prod policy.kruise.io/delete-protection-")
			}
		})
	}
}

func TestAdmitCRD(t *testing.T) {
	one := []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}
	t.Run("Cascading with an object, listed in the storage version", func(t *testing.T) {
		l := &fakeLookups{objects: one}
		a, reg := newAdmitter(t, l, true)
		res := a.Admit(context.Background(), deleteReview(t, "apiextensions.k8s.io", "customresourcedefinitions", crd(Cascading)))
		assert.False(t, res.Allowed)
		assert.Equal(t, ReasonCRDHasObjects, res.Reason)
		assert.Contains(t, res.Message, "1 object of it remain")
		assert.Equal(t, []schema.GroupVersionResource{{Group: "example.com", Version: "v1", Resource: "foos"}}, l.listed)
		families, err := reg.Gather()
		require.NoError(t, err)
		var got []string
		for _, f := range families {
			for _, m := range f.GetMetric() {
				got = append(got, f.GetName()+" "+m.GetLabel()[0].GetValue()+" "+m.GetLabel()[1].GetValue()+" "+fmt.Sprint(m.GetCounter().GetValue()))
			}
		}
		assert.Equal(t, []string{"crd_deletion_protection foos.example.com alice 1"}, got, "OpenKruise's counter, by name and user")
	})
	t.Run("Cascading whose objects are all deleting", func(t *testing.T) {
		a, _ := newAdmitter(t, &fakeLookups{objects: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deletedAt}}}}, true)
		res := a.Admit(context.Background(), deleteReview(t, "apiextensions.k8s.io", "customresourcedefinitions", crd(Cascading)))
		assert.True(t, res.Allowed)
	})
	t.Run("Cascading with the gate off: refused without a lookup", func(t *testing.T) {
		l := &fakeLookups{}
		a, _ := newAdmitter(t, l, false)
		res := a.Admit(context.Background(), deleteReview(t, "apiextensions.k8s.io", "customresourcedefinitions", crd(Cascading)))
		assert.False(t, res.Allowed)
		assert.Equal(t, ReasonCRDCascadingGateOff, res.Reason)
		assert.Empty(t, l.listed)
	})
	t.Run("a CRD never established has no objects", func(t *testing.T) {
		c := crd(Cascading)
		c.Status.Conditions = nil
		a, _ := newAdmitter(t, &fakeLookups{err: apierrors.NewNotFound(schema.GroupResource{Resource: "foos"}, "")}, true)
		res := a.Admit(context.Background(), deleteReview(t, "apiextensions.k8s.io", "customresourcedefinitions", c))
		assert.True(t, res.Allowed)
	})
	t.Run("an established CRD whose list is not found yet is not admitted", func(t *testing.T) {
		a, _ := newAdmitter(t, &fakeLookups{err: apierrors.NewNotFound(schema.GroupResource{Resource: "foos"}, "")}, true)
		res := a.Admit(context.Background(), deleteReview(t, "apiextensions.k8s.io", "customresourcedefinitions", crd(Cascading)))
		require.Error(t, res.Err)
	})
}

func TestAdmitOtherRequests(t *testing.T) {
	a, _ := newAdmitter(t, &fakeLookups{err: errors.New("never read")}, true)
	req := deleteReview(t, "", "namespaces", namespace(Cascading))
	req.Operation = admissionv1.Update
	assert.True(t, a.Admit(context.Background(), req).Allowed, "only DELETE is judged")
	req = deleteReview(t, "apps", "deployments", namespace(Always))
	assert.True(t, a.Admit(context.Background(), req).Allowed, "the workloads are the policy's")
	req = deleteReview(t, "", "namespaces", namespace(Always))
	req.OldObject.Raw = nil
	assert.Error(t, a.Admit(context.Background(), req).Err)
}

func TestAPILookupsPages(t *testing.T) {
	var pods []runtime.Object
	for _, n := range []string{"a", "b"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "prod"}})
	}
	client := fake.NewSimpleClientset(append(pods, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "prod"}})...)
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "foos"}
	obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Foo"}, ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}
	meta := metadatafake.NewSimpleMetadataClient(scheme, obj)
	l := APILookups{Client: client, Metadata: meta}
	got, err := l.Pods(context.Background(), "prod")
	require.NoError(t, err)
	assert.Len(t, got, 2)
	claims, err := l.Claims(context.Background(), "prod")
	require.NoError(t, err)
	assert.Len(t, claims, 1)
	objs, err := l.Objects(context.Background(), gvr)
	require.NoError(t, err)
	assert.Len(t, objs, 1)
}
