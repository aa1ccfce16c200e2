package persistentpodstate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

type harness struct {
	c      *Controller
	client *fake.Clientset
	kruise *kruisefake.Clientset
	f      informers.SharedInformerFactory
}

func newHarness(t *testing.T, objs []runtime.Object, kobjs []runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	kc := kruisefake.NewSimpleClientset(kobjs...)
	f := informers.NewSharedInformerFactory(client, 0)
	kf := kruiseinformers.NewSharedInformerFactory(kc, 0)
	c, err := New(Config{
		Config:               ctrlbase.Config{Client: client, KruiseClient: kc, Recorder: record.NewFakeRecorder(10)},
		States:               kf.Apps().V1alpha1().PersistentPodStates(),
		StatefulSets:         f.Apps().V1().StatefulSets(),
		AdvancedStatefulSets: kf.Apps().V1beta1().StatefulSets(),
		Pods:                 f.Core().V1().Pods(),
		Nodes:                f.Core().V1().Nodes(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	kf.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	return &harness{c: c, client: client, kruise: kc, f: f}
}

func statefulSet(annotations map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "sts-uid", Annotations: annotations},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(int32(2))},
	}
}

func readyPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-" + types.UID(name),
			Annotations:     map[string]string{"ip": "10.0.0." + name[len(name)-1:]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "sts-uid", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func node(name, z string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{host: name, zone: z}}}
}

func writes(kc *kruisefake.Clientset) int {
	n := 0
	for _, a := range kc.Actions() {
		if v := a.GetVerb(); v == "create" || v == "update" || v == "delete" || v == "patch" {
			n++
		}
	}
	return n
}

func TestSyncStatusWritesOnceThenNothing(t *testing.T) {
	spec := requiredSpec(host)
	spec.PersistentPodAnnotations = []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}}
	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 1}, Spec: spec}
	h := newHarness(t, []runtime.Object{statefulSet(nil), readyPod("web-0", "n1"), readyPod("web-1", "n2"), node("n1", "z1"), node("n2", "z2")},
		[]runtime.Object{pps})
	_, ctx := ktesting.NewTestContext(t)
	require.NoError(t, h.c.syncStatus(ctx, "ns/web"))
	got, err := h.kruise.AppsV1alpha1().PersistentPodStates("ns").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Status.ObservedGeneration)
	assert.Equal(t, map[string]appsv1alpha1.PodState{
		"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{host: "n1"}, Annotations: map[string]string{"ip": "10.0.0.0"}},
		"web-1": {NodeName: "n2", NodeTopologyLabels: map[string]string{host: "n2"}, Annotations: map[string]string{"ip": "10.0.0.1"}},
	}, got.Status.PodStates)

	// The cache now holds the written status: another pass writes nothing and reads no pod.
	require.NoError(t, h.c.stateIndexer.Update(got))
	before, podGets := writes(h.kruise), countGets(h.client)
	require.NoError(t, h.c.syncStatus(ctx, "ns/web"))
	assert.Equal(t, before, writes(h.kruise), "steady state: no write")
	assert.Equal(t, podGets, countGets(h.client), "steady state: no annotation read")
}

func countGets(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

func TestSyncGenerated(t *testing.T) {
	ask := map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true", appsv1alpha1.AnnotationRequiredPersistentTopology: zone}
	h := newHarness(t, []runtime.Object{statefulSet(ask)}, nil)
	_, ctx := ktesting.NewTestContext(t)
	key := TargetKey("ns", "apps", "web")
	require.NoError(t, h.c.syncGenerated(ctx, key))
	got, err := h.kruise.AppsV1alpha1().PersistentPodStates("ns").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, requiredSpec(zone), got.Spec)
	ref := metav1.GetControllerOf(got)
	require.NotNil(t, ref)
	assert.Equal(t, "sts-uid", string(ref.UID))

	// In sync: nothing written.
	require.NoError(t, h.c.stateIndexer.Add(got))
	before := writes(h.kruise)
	require.NoError(t, h.c.syncGenerated(ctx, key))
	assert.Equal(t, before, writes(h.kruise))

	// The annotation goes: the PersistentPodState goes.
	sts := statefulSet(nil)
	_, err = h.client.AppsV1().StatefulSets("ns").Update(ctx, sts, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, h.f.Apps().V1().StatefulSets().Informer().GetIndexer().Update(sts))
	require.NoError(t, h.c.syncGenerated(ctx, key))
	_, err = h.kruise.AppsV1alpha1().PersistentPodStates("ns").Get(ctx, "web", metav1.GetOptions{})
	assert.Error(t, err, "deleted")
}
