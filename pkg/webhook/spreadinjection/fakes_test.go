package spreadinjection

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var wsResource = schema.GroupResource{Group: "apps.kruise.io", Resource: "workloadspreads"}

// fakeSpreads is an API server of WorkloadSpreads (live) with a cache that may lag it.
type fakeSpreads struct {
	mu     sync.Mutex
	live   map[string]*appsv1alpha1.WorkloadSpread
	cache  map[string]*appsv1alpha1.WorkloadSpread
	rv     int
	writes int
	gets   int
	lists  int
	// conflicts makes the next n status writes conflict (another replica wrote first).
	conflicts int
	// fail makes every status write fail with it.
	fail error
}

func newFakeSpreads(list ...*appsv1alpha1.WorkloadSpread) *fakeSpreads {
	f := &fakeSpreads{live: map[string]*appsv1alpha1.WorkloadSpread{}, cache: map[string]*appsv1alpha1.WorkloadSpread{}}
	for _, ws := range list {
		f.rv++
		ws.ResourceVersion = strconv.Itoa(f.rv)
		f.live[ws.Namespace+"/"+ws.Name] = ws.DeepCopy()
		f.cache[ws.Namespace+"/"+ws.Name] = ws.DeepCopy()
	}
	return f
}

func (f *fakeSpreads) List(namespace string) ([]*appsv1alpha1.WorkloadSpread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.in(f.cache, namespace), nil
}

func (f *fakeSpreads) in(m map[string]*appsv1alpha1.WorkloadSpread, namespace string) []*appsv1alpha1.WorkloadSpread {
	var out []*appsv1alpha1.WorkloadSpread
	for _, ws := range m {
		if ws.Namespace == namespace {
			out = append(out, ws.DeepCopy())
		}
	}
	return out
}

func (f *fakeSpreads) Cached(namespace, name string) (*appsv1alpha1.WorkloadSpread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws, ok := f.cache[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(wsResource, name)
	}
	return ws.DeepCopy(), nil
}

func (f *fakeSpreads) ListLive(_ context.Context, namespace string) ([]*appsv1alpha1.WorkloadSpread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return f.in(f.live, namespace), nil
}

func (f *fakeSpreads) Get(_ context.Context, namespace, name string) (*appsv1alpha1.WorkloadSpread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	ws, ok := f.live[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(wsResource, name)
	}
	return ws.DeepCopy(), nil
}

func (f *fakeSpreads) UpdateStatus(_ context.Context, ws *appsv1alpha1.WorkloadSpread) (*appsv1alpha1.WorkloadSpread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := ws.Namespace + "/" + ws.Name
	cur, ok := f.live[key]
	switch {
	case f.fail != nil:
		return nil, f.fail
	case !ok:
		return nil, apierrors.NewNotFound(wsResource, ws.Name)
	case f.conflicts > 0:
		f.conflicts--
		f.bump(cur)
		return nil, apierrors.NewConflict(wsResource, ws.Name, nil)
	case cur.ResourceVersion != ws.ResourceVersion:
		return nil, apierrors.NewConflict(wsResource, ws.Name, nil)
	}
	f.writes++
	out := cur.DeepCopy()
	out.Status = *ws.Status.DeepCopy()
	f.live[key] = out
	f.bump(out)
	return out.DeepCopy(), nil
}

func (f *fakeSpreads) bump(ws *appsv1alpha1.WorkloadSpread) {
	f.rv++
	ws.ResourceVersion = strconv.Itoa(f.rv)
}

func (f *fakeSpreads) status(t *testing.T, name string) appsv1alpha1.WorkloadSpreadStatus {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	ws, ok := f.live["ns/"+name]
	require.True(t, ok)
	return *ws.Status.DeepCopy()
}

type fakeTargets map[string]*unstructured.Unstructured

func (f fakeTargets) Get(_ context.Context, _ string, ref appsv1alpha1.TargetReference) (*unstructured.Unstructured, error) {
	return f[ref.Kind+"/"+ref.Name], nil
}

type fakePods map[string]*corev1.Pod

func (f fakePods) Get(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p, ok := f[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	return p.DeepCopy(), nil
}

func cnt(i int32) *intstr.IntOrString  { v := intstr.FromInt32(i); return &v }
func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }

func zone(z string) *corev1.NodeSelectorTerm {
	return &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}
}

func spreadOf(name, apiVersion, kind, target string, subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	return &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "name"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target},
			Subsets:         subsets,
		},
	}
}

func zones(maxA, maxB *intstr.IntOrString) []appsv1alpha1.WorkloadSpreadSubset {
	return []appsv1alpha1.WorkloadSpreadSubset{
		{Name: "a", RequiredNodeSelectorTerm: zone("a"), MaxReplicas: maxA},
		{Name: "b", RequiredNodeSelectorTerm: zone("b"), MaxReplicas: maxB},
	}
}

func ownedPod(name, apiVersion, kind, owner string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img"}}},
	}
}

func createReq(t *testing.T, pod *corev1.Pod, dry bool) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		UID: "r", Namespace: "ns", Name: pod.Name, Operation: admissionv1.Create, DryRun: ptr.To(dry),
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw},
	}
}

func deleteReq(t *testing.T, pod *corev1.Pod, dry bool) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		UID: "r", Namespace: "ns", Name: pod.Name, Operation: admissionv1.Delete, DryRun: ptr.To(dry),
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, OldObject: runtime.RawExtension{Raw: raw},
	}
}

func evictReq(name string, dryRunOption bool) *admissionv1.AdmissionRequest {
	body := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}}`
	if dryRunOption {
		body = `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"},"deleteOptions":{"dryRun":["All"]}}`
	}
	return &admissionv1.AdmissionRequest{
		UID: "r", Namespace: "ns", Name: name, Operation: admissionv1.Create, SubResource: "eviction", DryRun: ptr.To(false),
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: []byte(body)},
	}
}

func newWebhook(s *fakeSpreads) (*Webhook, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(10)
	n := 0
	return &Webhook{Spreads: s, KruiseNamespace: "kruise-system", Recorder: rec, Clock: clocktesting.NewFakePassiveClock(t0),
		NewKey: func() string { n++; return "key-" + strconv.Itoa(n) }}, rec
}
