package sidecarinjection

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

func sidecarSet(name string, mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: name + "-agent", Image: "agent:1"}}},
		},
	}
	for _, m := range mods {
		m(ss)
	}
	return ss
}

func podRequest(t *testing.T, op admissionv1.Operation, labels map[string]string) *admissionv1.AdmissionRequest {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main:1"}}},
	}
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		UID: "u", Operation: op, Namespace: "team-a",
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: raw},
	}
}

// patched applies res's patch to the request's pod.
func patched(t *testing.T, req *admissionv1.AdmissionRequest, patch []byte) *corev1.Pod {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	require.NoError(t, err)
	raw, err := p.Apply(req.Object.Raw)
	require.NoError(t, err)
	out := &corev1.Pod{}
	require.NoError(t, json.Unmarshal(raw, out))
	return out
}

// startCaches runs Caches on fake clientsets holding objs and waits for them to sync.
func startCaches(t *testing.T, kube []runtime.Object, kruise []runtime.Object) *Caches {
	t.Helper()
	c := NewCaches(kubefake.NewClientset(kube...), kruisefake.NewSimpleClientset(kruise...), "kruise-system", "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); c.Shutdown() })
	early, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	assert.ErrorIs(t, c.WaitSynced(early), errNotSynced, "synced before the caches started")
	stop()
	c.Start(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), c.synced...))
	require.NoError(t, c.WaitSynced(ctx))
	return c
}

func TestAdmitInjectsFromTheCaches(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned-v1", Namespace: "kruise-system", Labels: map[string]string{sidecarrules.NameLabel: "pinned"}},
	}
	data, err := sidecarrules.RevisionData(sidecarSet("pinned", func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Image = "agent:old" }))
	require.NoError(t, err)
	rev.Data.Raw = data
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "team-a", "mesh": "on"}}}
	c := startCaches(t, []runtime.Object{ns, rev}, []runtime.Object{
		sidecarSet("log"),
		sidecarSet("meshonly", func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}}
		}),
		sidecarSet("elsewhere", func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "team-b"}}
		}),
		sidecarSet("paused", func(ss *appsv1beta1.SidecarSet) { ss.Spec.InjectionStrategy.Paused = true }),
		sidecarSet("pinned", func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("pinned-v1")}
		}),
	})
	in := c.Injector()
	in.Clock = clocktesting.NewFakePassiveClock(at)

	req := podRequest(t, admissionv1.Create, map[string]string{"app": "web"})
	res := in.Admit(context.Background(), req)
	require.True(t, res.Allowed, "%+v", res)
	pod := patched(t, req, res.Patch)
	var got []string
	for _, c := range pod.Spec.Containers {
		got = append(got, c.Name+"="+c.Image)
	}
	assert.Equal(t, []string{"log-agent=agent:1", "meshonly-agent=agent:1", "pinned-agent=agent:old", "main=main:1"}, got)
	assert.Equal(t, "log,meshonly,pinned", pod.Annotations[sidecarrules.InjectedListAnnotation])
	specs, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashAnnotation)
	require.NoError(t, err)
	assert.Equal(t, "pinned-v1", specs["pinned"].ControllerRevision)
	assert.True(t, specs["log"].UpdateTimestamp.Time.Equal(at))

	other := podRequest(t, admissionv1.Create, map[string]string{"app": "db"})
	res = in.Admit(context.Background(), other)
	assert.True(t, res.Allowed)
	assert.Empty(t, res.Patch, "a pod no SidecarSet selects is left as it is")
}

type fixed struct {
	sets []*appsv1beta1.SidecarSet
}

func (f fixed) List() ([]*appsv1beta1.SidecarSet, error) { return f.sets, nil }

type noNamespaces struct{}

func (noNamespaces) Labels(name string) (map[string]string, error) {
	return map[string]string{corev1.LabelMetadataName: name}, nil
}

type noRevisions struct{}

func (noRevisions) Revision(string) (*appsv1.ControllerRevision, error) { return nil, nil }
func (noRevisions) Revisions(string, string) ([]*appsv1.ControllerRevision, error) {
	return nil, nil
}

func TestAdmitRefusesAndSkips(t *testing.T) {
	conflict := &Injector{SidecarSets: fixed{[]*appsv1beta1.SidecarSet{
		sidecarSet("a", func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Name = "agent" }),
		sidecarSet("b", func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Name = "agent" }),
	}}, Namespaces: noNamespaces{}, Revisions: noRevisions{}}
	res := conflict.Admit(context.Background(), podRequest(t, admissionv1.Create, map[string]string{"app": "web"}))
	assert.False(t, res.Allowed)
	assert.Equal(t, string(sidecarrules.ReasonContainerConflict), res.Reason)
	assert.EqualValues(t, http.StatusUnprocessableEntity, res.Code)
	assert.Contains(t, res.Message, "SidecarSets a and b")
	assert.Contains(t, conflict.Webhook().Reasons, res.Reason, "the reason is declared")

	missing := &Injector{SidecarSets: fixed{[]*appsv1beta1.SidecarSet{sidecarSet("a", func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")}
	})}}, Namespaces: noNamespaces{}, Revisions: noRevisions{}}
	res = missing.Admit(context.Background(), podRequest(t, admissionv1.Create, map[string]string{"app": "web"}))
	assert.Equal(t, string(sidecarrules.ReasonRevisionNotFound), res.Reason)

	update := podRequest(t, admissionv1.Update, map[string]string{"app": "web"})
	res = conflict.Admit(context.Background(), update)
	assert.True(t, res.Allowed, "an update is never injected")
	assert.Empty(t, res.Patch)

	bad := podRequest(t, admissionv1.Create, nil)
	bad.Object.Raw = []byte("{")
	res = conflict.Admit(context.Background(), bad)
	assert.Equal(t, ReasonBadRequest, res.Reason)
}

// A SidecarSet that selects every pod (only NotIn and DoesNotExist) never reaches the pods of
// kube-system or of kruise's own namespace, even when the configuration sends them: once kruise's
// pods were gone, their ReplicaSet's creates would be refused for ever.
func TestAdmitNeverInjectsKubeSystemOrKruise(t *testing.T) {
	all := sidecarSet("everything", func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "no-such-label", Operator: metav1.LabelSelectorOpDoesNotExist},
		}}
	})
	in := &Injector{SidecarSets: fixed{[]*appsv1beta1.SidecarSet{all}}, Namespaces: noNamespaces{}, Revisions: noRevisions{},
		KruiseNamespace: "kruise-system"}
	for ns, injected := range map[string]bool{"kube-system": false, "kruise-system": false, "team-a": true} {
		req := podRequest(t, admissionv1.Create, map[string]string{"app.kubernetes.io/name": "kruise-controller"})
		req.Namespace = ns
		res := in.Admit(context.Background(), req)
		require.True(t, res.Allowed, "%s: %+v", ns, res)
		assert.Equal(t, injected, len(res.Patch) > 0, ns)
	}
}

// A replica whose caches have not synced refuses a pod a SidecarSet may select, saying why,
// rather than create it without its sidecars; once synced it injects.
func TestAdmitWaitsForTheCaches(t *testing.T) {
	synced := errNotSynced
	in := &Injector{SidecarSets: fixed{[]*appsv1beta1.SidecarSet{sidecarSet("log")}}, Namespaces: noNamespaces{}, Revisions: noRevisions{},
		WaitSynced: func(context.Context) error { return synced }}
	res := in.Admit(context.Background(), podRequest(t, admissionv1.Create, map[string]string{"app": "web"}))
	assert.False(t, res.Allowed)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "has not read the SidecarSets yet")

	synced = nil
	res = in.Admit(context.Background(), podRequest(t, admissionv1.Create, map[string]string{"app": "web"}))
	assert.True(t, res.Allowed)
	assert.NotEmpty(t, res.Patch)
}
