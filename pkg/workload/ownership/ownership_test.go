package ownership

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

var kind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet"}

func owner(uid types.UID) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: uid}
}

func pod(name string, app string, ref *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": app}}}
	if ref != nil {
		p.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return p
}

func controllerRef(apiVersion, kindName string, uid types.UID) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kindName, Name: "db", UID: uid, Controller: ptr.To(true)}
}

func TestRef(t *testing.T) {
	for name, tc := range map[string]struct {
		ref  *metav1.OwnerReference
		want bool
	}{
		"v1beta1":                {controllerRef("apps.kruise.io/v1beta1", "StatefulSet", "u"), true},
		"v1alpha1 (#2520)":       {controllerRef("apps.kruise.io/v1alpha1", "StatefulSet", "u"), true},
		"the built-in kind":      {controllerRef("apps/v1", "StatefulSet", "u"), false},
		"another kind":           {controllerRef("apps.kruise.io/v1beta1", "CloneSet", "u"), false},
		"an owner, not a master": {&metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", UID: "u"}, false},
		"none":                   {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Ref(pod("p", "db", tc.ref), kind) != nil)
		})
	}
}

func TestOwnedByIndex(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
	require.NoError(t, AddIndex(inf, kind))
	for _, p := range []*corev1.Pod{
		pod("mine", "db", controllerRef("apps.kruise.io/v1alpha1", "StatefulSet", "u1")),
		pod("other", "db", controllerRef("apps.kruise.io/v1beta1", "StatefulSet", "u2")),
		pod("orphan", "db", nil),
	} {
		require.NoError(t, inf.GetIndexer().Add(p))
	}
	impostor := pod("impostor", "db", controllerRef("apps.kruise.io/v1beta1", "StatefulSet", "u1"))
	impostor.Namespace = "elsewhere"
	require.NoError(t, inf.GetIndexer().Add(impostor))
	got, err := Owned[*corev1.Pod](inf.GetIndexer(), kind, owner("u1"))
	require.NoError(t, err)
	require.Len(t, got, 1, "only the pod of the owner's namespace")
	assert.Equal(t, "mine", got[0].Name)
}

func TestSelecting(t *testing.T) {
	type w struct {
		name string
		sel  *metav1.LabelSelector
	}
	ws := []w{
		{"match", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		{"other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		{"empty", &metav1.LabelSelector{}},
		{"none", nil},
		{"invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}},
	}
	got := Selecting(pod("p", "db", nil), ws, func(x w) *metav1.LabelSelector { return x.sel })
	require.Len(t, got, 1)
	assert.Equal(t, "match", got[0].name)
}

func TestClaimPods(t *testing.T) {
	const uid = "set-uid"
	mine := controllerRef("apps.kruise.io/v1beta1", "StatefulSet", uid)
	kept := pod("kept", "db", mine)
	moved := pod("moved", "web", mine) // relabelled: no longer selected
	leaving := pod("leaving", "web", mine)
	leaving.DeletionTimestamp = &metav1.Time{}
	orphan := pod("orphan", "db", nil)
	finished := pod("finished", "db", nil)
	finished.Status.Phase = corev1.PodSucceeded
	deleting := pod("deleting", "db", nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	taken := pod("taken", "db", controllerRef("apps/v1", "ReplicaSet", "rs"))
	gone := pod("gone", "db", nil) // in the cache, not in the API server

	client := fake.NewClientset(kept, moved, leaving, orphan, finished, deleting, taken)
	_, ctx := ktesting.NewTestContext(t)
	sel := labels.SelectorFromSet(labels.Set{"app": "db"})
	claim := Claim{
		Client: client.CoreV1(), Owner: owner(uid), Kind: kind, Selector: sel,
		Recheck:   func(context.Context) (metav1.Object, error) { return owner(uid), nil },
		Adoptable: func(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodSucceeded },
	}
	got, err := claim.Pods(ctx, []*corev1.Pod{kept, moved, leaving}, []*corev1.Pod{kept, orphan, finished, deleting, taken, gone})
	require.NoError(t, err)
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	assert.ElementsMatch(t, []string{"kept", "leaving", "orphan"}, names)

	var patched []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patched = append(patched, a.(clienttesting.PatchAction).GetName())
		}
	}
	assert.ElementsMatch(t, []string{"moved", "orphan", "gone"}, patched, "released moved, adopted orphan, tried gone")
	p, err := client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, Ref(p, kind), "adopted: %v", p.OwnerReferences)
	assert.Equal(t, types.UID(uid), Ref(p, kind).UID)
	p, err = client.CoreV1().Pods("ns").Get(ctx, "moved", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, p.OwnerReferences, "released")
}

// A cached owner that was deleted and made again (another UID) adopts nothing.
func TestClaimAdoptsOnlyForTheOwnerThatExists(t *testing.T) {
	orphan := pod("orphan", "db", nil)
	client := fake.NewClientset(orphan)
	_, ctx := ktesting.NewTestContext(t)
	claim := Claim{
		Client: client.CoreV1(), Owner: owner("old"), Kind: kind, Selector: labels.SelectorFromSet(labels.Set{"app": "db"}),
		Recheck: func(context.Context) (metav1.Object, error) { return owner("new"), nil },
	}
	got, err := claim.Pods(ctx, nil, []*corev1.Pod{orphan})
	require.NoError(t, err)
	assert.Empty(t, got)
	for _, a := range client.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb())
	}
}
