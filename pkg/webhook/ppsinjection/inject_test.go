package ppsinjection

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
)

const (
	zone = "topology.kubernetes.io/zone"
	host = "kubernetes.io/hostname"
)

func spec() appsv1alpha1.PersistentPodStateSpec {
	return appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{host}},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{
			{Weight: 40, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone, "absent"}}},
			{Weight: 0, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}}},
			{Weight: 30, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"absent"}}},
		},
	}
}

var state = appsv1alpha1.PodState{NodeName: "n1", NodeTopologyLabels: map[string]string{host: "n1", zone: "z1"}}

func in(k, v string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}
}

func TestSteer(t *testing.T) {
	s := spec()
	assert.Equal(t, Steering{
		NodeSelector: map[string]string{host: "n1"},
		// the weight-0 term (the API server would refuse the pod) and the one with no recorded
		// value are skipped
		Preferred: []corev1.PreferredSchedulingTerm{{Weight: 40, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "z1")}}}},
	}, Steer(&s, state, false))

	// The node gone: the required keys become a preferred term, nothing is required.
	got := Steer(&s, state, true)
	assert.Nil(t, got.NodeSelector)
	assert.Equal(t, []corev1.PreferredSchedulingTerm{
		{Weight: NodeGoneWeight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(host, "n1")}}},
		{Weight: 40, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "z1")}}},
	}, got.Preferred)
}

func pod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "u", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func apply(t *testing.T, p *corev1.Pod, ops []Operation) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	body, err := json.Marshal(ops)
	require.NoError(t, err)
	patch, err := jsonpatch.DecodePatch(body)
	require.NoError(t, err)
	out, err := patch.Apply(raw)
	require.NoError(t, err)
	got := &corev1.Pod{}
	require.NoError(t, json.Unmarshal(out, got))
	return got
}

func TestPatchMergesWithThePodsOwn(t *testing.T) {
	s := spec()
	p := pod(map[string]string{"keep": "me"})
	p.Spec.NodeSelector = map[string]string{"disk": "ssd", host: "other"}
	own := corev1.PreferredSchedulingTerm{Weight: 5, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in("gpu", "yes")}}}
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{in("pool", "a")}}}}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution:  required,
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{own},
	}, PodAntiAffinity: &corev1.PodAntiAffinity{}}
	before := p.DeepCopy()
	got := apply(t, p, Patch(p, "web", Steer(&s, state, false)))
	assert.Equal(t, before, p, "Patch does not change the pod")
	assert.Equal(t, map[string]string{"keep": "me", appsv1alpha1.InjectedPersistentPodStateAnnotation: "web"}, got.Annotations)
	assert.Equal(t, map[string]string{"disk": "ssd", host: "n1"}, got.Spec.NodeSelector, "the recorded value overrides the pod's own")
	assert.Equal(t, required, got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	assert.NotNil(t, got.Spec.Affinity.PodAntiAffinity)
	assert.Equal(t, []corev1.PreferredSchedulingTerm{own, {Weight: 40, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "z1")}}}},
		got.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)

	// A pod without annotations, selector or affinity.
	bare := pod(nil)
	got = apply(t, bare, Patch(bare, "web", Steer(&s, state, false)))
	assert.Equal(t, map[string]string{host: "n1"}, got.Spec.NodeSelector)
	assert.Len(t, got.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1)

	assert.Nil(t, Patch(got, "web", Steer(&s, state, false)), "reinvoked: already injected")
	assert.Nil(t, Patch(bare, "web", Steering{}), "nothing to steer")
}

func TestOwnerAndSelect(t *testing.T) {
	_, _, ok := Owner(pod(nil))
	assert.True(t, ok)
	p := pod(nil)
	p.OwnerReferences[0].APIVersion = "apps.kruise.io/v1beta1"
	g, n, ok := Owner(p)
	assert.True(t, ok)
	assert.Equal(t, "apps.kruise.io", g)
	assert.Equal(t, "web", n)
	p.OwnerReferences[0].Kind = "CloneSet"
	_, _, ok = Owner(p)
	assert.False(t, ok)
	p.OwnerReferences[0].Kind, p.OwnerReferences[0].Controller = "StatefulSet", nil
	_, _, ok = Owner(p)
	assert.False(t, ok, "not its controller")

	list := []appsv1alpha1.PersistentPodState{
		{ObjectMeta: metav1.ObjectMeta{Name: "kruise"}, Spec: appsv1alpha1.PersistentPodStateSpec{TargetReference: appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "StatefulSet", Name: "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &metav1.Time{}}, Spec: spec()},
		{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Spec: spec()},
	}
	assert.Equal(t, "apps", Select(list, "apps", "web").Name)
	assert.Equal(t, "kruise", Select(list, "apps.kruise.io", "web").Name)
	assert.Nil(t, Select(list, "apps", "db"))
}

func review(t *testing.T, p *corev1.Pod) *admissionv1.AdmissionRequest {
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: p.Namespace, Name: p.Name,
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}}
}

func TestWebhook(t *testing.T) {
	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: spec(),
		Status: appsv1alpha1.PersistentPodStateStatus{PodStates: map[string]appsv1alpha1.PodState{"web-0": state}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	ctx := context.Background()
	admitted := func(nodes ...runtime.Object) *corev1.Pod {
		wh := Webhook(Lookups{States: kruisefake.NewSimpleClientset(pps).AppsV1alpha1(), Nodes: fake.NewClientset(nodes...).CoreV1()}, "kruise-system")
		p := pod(nil)
		res := wh.Admitter.Admit(ctx, review(t, p))
		require.True(t, res.Allowed)
		if res.Patch == nil {
			return p
		}
		var ops []Operation
		require.NoError(t, json.Unmarshal(res.Patch, &ops))
		return apply(t, p, ops)
	}
	got := admitted(node)
	assert.Equal(t, map[string]string{host: "n1"}, got.Spec.NodeSelector)
	assert.Equal(t, "web", got.Annotations[appsv1alpha1.InjectedPersistentPodStateAnnotation])

	got = admitted()
	assert.Empty(t, got.Spec.NodeSelector, "node gone: nothing required")
	assert.Equal(t, int32(NodeGoneWeight), got.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight)

	// Another pod name, a pod without a StatefulSet owner: untouched.
	wh := Webhook(Lookups{States: kruisefake.NewSimpleClientset(pps).AppsV1alpha1(), Nodes: fake.NewClientset(node).CoreV1()}, "kruise-system")
	other := pod(nil)
	other.Name = "web-7"
	assert.Nil(t, wh.Admitter.Admit(ctx, review(t, other)).Patch)
	orphan := pod(nil)
	orphan.OwnerReferences = nil
	assert.Nil(t, wh.Admitter.Admit(ctx, review(t, orphan)).Patch)
}
