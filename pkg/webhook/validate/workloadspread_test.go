package validate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

func wsCount(i int32) *intstr.IntOrString { v := intstr.FromInt32(i); return &v }
func wsPct(s string) *intstr.IntOrString  { v := intstr.FromString(s); return &v }

func zoneTerm(z string) *corev1.NodeSelectorTerm {
	return &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}
}

func spreadFor(kind, apiVersion string, subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	return &appsv1alpha1.WorkloadSpread{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "WorkloadSpread"},
		ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: ns},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: "app"},
			Subsets:         subsets,
		},
	}
}

// The reference's documented spreads (OpenKruise's docs and proposal), all accepted.
func referenceSpreads() map[string]*appsv1alpha1.WorkloadSpread {
	zones := spreadFor("CloneSet", "apps.kruise.io/v1alpha1",
		appsv1alpha1.WorkloadSpreadSubset{Name: "subset-a", RequiredNodeSelectorTerm: zoneTerm("zone-a"), MaxReplicas: wsPct("34%")},
		appsv1alpha1.WorkloadSpreadSubset{Name: "subset-b", RequiredNodeSelectorTerm: zoneTerm("zone-b"), MaxReplicas: wsPct("33%")},
		appsv1alpha1.WorkloadSpreadSubset{Name: "subset-c", RequiredNodeSelectorTerm: zoneTerm("zone-c"), MaxReplicas: wsPct("33%")})
	spot := spreadFor("Deployment", "apps/v1",
		appsv1alpha1.WorkloadSpreadSubset{Name: "subset-normal", MaxReplicas: wsCount(3),
			RequiredNodeSelectorTerm: &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "app.deploy/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"normal"}}}},
			Patch:                    runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"subset":"normal"}}}`)}},
		appsv1alpha1.WorkloadSpreadSubset{Name: "subset-spot",
			PreferredNodeSelectorTerms: []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "spot", Operator: corev1.NodeSelectorOpExists}}}}},
			Tolerations:                []corev1.Toleration{{Key: "node.kubernetes.io/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Patch:                      runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"subset":"spot"}},"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"2"}}}]}}`)}})
	adaptive := spreadFor("CloneSet", "apps.kruise.io/v1alpha1",
		appsv1alpha1.WorkloadSpreadSubset{Name: "ecs", MaxReplicas: wsCount(100), RequiredNodeSelectorTerm: zoneTerm("ecs")},
		appsv1alpha1.WorkloadSpreadSubset{Name: "eci", RequiredNodeSelectorTerm: zoneTerm("eci")})
	adaptive.Spec.ScheduleStrategy = appsv1alpha1.WorkloadSpreadScheduleStrategy{Type: appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptr.To[int32](30), DisableSimulationSchedule: true}}
	sts := spreadFor("StatefulSet", "apps.kruise.io/v1beta1",
		appsv1alpha1.WorkloadSpreadSubset{Name: "a", MaxReplicas: wsCount(2)}, appsv1alpha1.WorkloadSpreadSubset{Name: "b"})
	job := spreadFor("Job", "batch/v1", appsv1alpha1.WorkloadSpreadSubset{Name: "a", MaxReplicas: wsPct("50%")}, appsv1alpha1.WorkloadSpreadSubset{Name: "b"})
	filter := spreadFor("TFJob", "kubeflow.org/v1", appsv1alpha1.WorkloadSpreadSubset{Name: "a", MaxReplicas: wsPct("50%")}, appsv1alpha1.WorkloadSpreadSubset{Name: "b", MaxReplicas: wsPct("50%")})
	filter.Spec.TargetFilter = &appsv1alpha1.TargetFilter{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
		ReplicasPathList: []string{"spec.tfReplicaSpecs.Worker.replicas"}}
	one := spreadFor("Deployment", "apps/v1", appsv1alpha1.WorkloadSpreadSubset{Name: "only"})
	return map[string]*appsv1alpha1.WorkloadSpread{"zones": zones, "spot": spot, "adaptive": adaptive, "statefulset": sts, "job": job, "any kind with a filter": filter, "one subset": one}
}

func spreadRequest(t *testing.T, ws, old *appsv1alpha1.WorkloadSpread) *admissionv1.AdmissionRequest {
	t.Helper()
	enc := func(o any) runtime.RawExtension {
		raw, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: raw}
	}
	req := &admissionv1.AdmissionRequest{
		UID: "req-1", Operation: admissionv1.Create, Namespace: ns, Name: ws.Name, DryRun: ptr.To(false),
		Kind:     metav1.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: "WorkloadSpread"},
		Resource: metav1.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "workloadspreads"},
		Object:   enc(ws),
	}
	if old != nil {
		req.Operation, req.OldObject = admissionv1.Update, enc(old)
	}
	return req
}

type fakeSpreadTargets map[string]*unstructured.Unstructured

func (f fakeSpreadTargets) Get(_ context.Context, _ string, ref appsv1alpha1.TargetReference) (*unstructured.Unstructured, error) {
	if o, ok := f[ref.Kind+"/"+ref.Name]; ok {
		return o, nil
	}
	if ref.Name == "broken" {
		return nil, errors.New("API server unavailable")
	}
	return nil, nil
}

type recordingScope struct {
	included []string
	err      error
}

func (s *recordingScope) Include(_ context.Context, ws *appsv1alpha1.WorkloadSpread) error {
	s.included = append(s.included, ws.Name)
	return s.err
}

func deploymentTarget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "app", "namespace": ns},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "main", "image": "img"}}}}}}}
}

func TestWorkloadSpreadAcceptsTheReferenceSpreads(t *testing.T) {
	for name, ws := range referenceSpreads() {
		t.Run(name, func(t *testing.T) {
			scope := &recordingScope{}
			wh := WorkloadSpreadWebhook(kruisefake.NewSimpleClientset().AppsV1alpha1(), true, fakeSpreadTargets{"Deployment/app": deploymentTarget()}, scope)
			res := wh.Admitter.Admit(context.Background(), spreadRequest(t, ws, nil))
			assert.True(t, res.Allowed, "%s: %s", res.Reason, res.Message)
			assert.Empty(t, res.Warnings)
			assert.Equal(t, []string{"ws"}, scope.included, "routed before admitted")
		})
	}
}

func TestWorkloadSpreadRefusals(t *testing.T) {
	ref := referenceSpreads()
	mod := func(base *appsv1alpha1.WorkloadSpread, f func(*appsv1alpha1.WorkloadSpread)) *appsv1alpha1.WorkloadSpread {
		ws := base.DeepCopy()
		f(ws)
		return ws
	}
	for _, tc := range []struct {
		name, reason, message string
		ws                    *appsv1alpha1.WorkloadSpread
	}{
		{name: "no target", reason: ReasonInvalidTargetRef, message: "spec.targetRef: Required value",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.TargetReference = nil })},
		{name: "target without a name", reason: ReasonInvalidTargetRef, message: "apiVersion, kind and name are required",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.TargetReference.Name = "" })},
		{name: "bad apiVersion", reason: ReasonInvalidTargetRef, message: "spec.targetRef.apiVersion",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.TargetReference.APIVersion = "a/b/c" })},
		{name: "no subset", reason: ReasonInvalidSubsets, message: "at least one subset",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets = nil })},
		{name: "too many subsets", reason: ReasonInvalidSubsets, message: "must have at most 1000 items",
			ws: mod(ref["one subset"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.Subsets = make([]appsv1alpha1.WorkloadSpreadSubset, MaxSpreadSubsets+1)
			})},
		{name: "duplicate names", reason: ReasonInvalidSubsets, message: `spec.subsets[1].name: Duplicate value: "subset-a"`,
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[1].Name = "subset-a" })},
		{name: "empty name", reason: ReasonInvalidSubsets, message: "spec.subsets[0].name: Required value",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[0].Name = "" })},
		{name: "bad required term operator", reason: ReasonInvalidSubsets, message: "spec.subsets[0].requiredNodeSelectorTerm",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.Subsets[0].RequiredNodeSelectorTerm.MatchExpressions[0].Operator = "Near"
			})},
		{name: "bad required term key", reason: ReasonInvalidSubsets, message: "spec.subsets[0].requiredNodeSelectorTerm",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.Subsets[0].RequiredNodeSelectorTerm.MatchExpressions[0].Key = "bad key!"
			})},
		{name: "preferred weight", reason: ReasonInvalidSubsets, message: "must be in the range 1-100",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[1].PreferredNodeSelectorTerms[0].Weight = 0 })},
		{name: "toleration value with Exists", reason: ReasonInvalidSubsets, message: "value must be empty when operator is Exists",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[1].Tolerations[0].Value = "x" })},
		{name: "toleration effect", reason: ReasonInvalidSubsets, message: "spec.subsets[1].tolerations[0].effect: Unsupported value",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[1].Tolerations[0].Effect = "Sometimes" })},
		{name: "toleration without key must be Exists", reason: ReasonInvalidSubsets, message: "operator must be Exists when key is empty",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.Subsets[1].Tolerations[0] = corev1.Toleration{Operator: corev1.TolerationOpEqual}
			})},
		{name: "patch that does not merge into the target", reason: ReasonInvalidSubsets, message: "spec.subsets[0].patch",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.Subsets[0].Patch.Raw = []byte(`{"spec":{"containers":"main"}}`)
			})},
		{name: "patch leaving a container without image", reason: ReasonInvalidSubsets, message: "has no image",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.Subsets[0].Patch.Raw = []byte(`{"spec":{"containers":[{"name":"extra"}]}}`)
			})},
		{name: "mixed maxReplicas types", reason: ReasonInvalidSubsets, message: "must be of one type",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[1].MaxReplicas = wsCount(3) })},
		{name: "negative count", reason: ReasonInvalidSubsets, message: "non-negative",
			ws: mod(ref["spot"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[0].MaxReplicas = wsCount(-1) })},
		{name: "percent over 100", reason: ReasonInvalidSubsets, message: "more than 100%",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[2].MaxReplicas = wsPct("34%") })},
		{name: "percents short of 100 with a limited last subset", reason: ReasonInvalidSubsets, message: "add up to 99%",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[2].MaxReplicas = wsPct("32%") })},
		{name: "StatefulSet percent", reason: ReasonInvalidSubsets, message: "a StatefulSet's subsets take counts",
			ws: mod(ref["statefulset"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[0].MaxReplicas = wsPct("50%") })},
		{name: "unknown strategy", reason: ReasonInvalidScheduleStrategy, message: "spec.scheduleStrategy.type: Unsupported value",
			ws: mod(ref["zones"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.ScheduleStrategy.Type = "Random" })},
		{name: "adaptive settings with Fixed", reason: ReasonInvalidScheduleStrategy, message: "must be Adaptive when adaptive is set",
			ws: mod(ref["adaptive"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.ScheduleStrategy.Type = "Fixed" })},
		{name: "adaptive with a limited last subset", reason: ReasonInvalidScheduleStrategy, message: "the last subset must have no maxReplicas",
			ws: mod(ref["adaptive"], func(ws *appsv1alpha1.WorkloadSpread) { ws.Spec.Subsets[1].MaxReplicas = wsCount(5) })},
		{name: "rescheduleCriticalSeconds beyond (300-5)/(n-1)", reason: ReasonInvalidScheduleStrategy, message: "must be in [0, 295]",
			ws: mod(ref["adaptive"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.ScheduleStrategy.Adaptive.RescheduleCriticalSeconds = ptr.To[int32](296)
			})},
		{name: "negative rescheduleCriticalSeconds", reason: ReasonInvalidScheduleStrategy, message: "must be in [0, 295]",
			ws: mod(ref["adaptive"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.ScheduleStrategy.Adaptive.RescheduleCriticalSeconds = ptr.To[int32](-1)
			})},
		{name: "bad target filter", reason: ReasonInvalidSelector, message: "spec.targetFilter.selector",
			ws: mod(ref["any kind with a filter"], func(ws *appsv1alpha1.WorkloadSpread) {
				ws.Spec.TargetFilter.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bad"}}}
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scope := &recordingScope{}
			wh := WorkloadSpreadWebhook(kruisefake.NewSimpleClientset().AppsV1alpha1(), true, fakeSpreadTargets{"Deployment/app": deploymentTarget()}, scope)
			res := wh.Admitter.Admit(context.Background(), spreadRequest(t, tc.ws, nil))
			require.False(t, res.Allowed)
			assert.Equal(t, tc.reason, res.Reason)
			assert.Equal(t, int32(422), res.Code)
			assert.Contains(t, res.Message, tc.message)
			assert.Empty(t, scope.included, "a refused spread is never routed")
		})
	}
	// With 3 subsets the bound is (300-5)/2 = 147.
	three := mod(ref["adaptive"], func(ws *appsv1alpha1.WorkloadSpread) {
		ws.Spec.Subsets = append([]appsv1alpha1.WorkloadSpreadSubset{{Name: "first", MaxReplicas: wsCount(1)}}, ws.Spec.Subsets...)
		ws.Spec.ScheduleStrategy.Adaptive.RescheduleCriticalSeconds = ptr.To[int32](147)
	})
	assert.Empty(t, checkScheduleStrategy(&three.Spec))
	three.Spec.ScheduleStrategy.Adaptive.RescheduleCriticalSeconds = ptr.To[int32](148)
	assert.NotEmpty(t, checkScheduleStrategy(&three.Spec))
}

func TestWorkloadSpreadConflictsAndUpdates(t *testing.T) {
	ref := referenceSpreads()
	other := ref["zones"].DeepCopy()
	other.Name = "first"
	other.Spec.TargetReference.APIVersion = "apps.kruise.io/v1beta1"
	kruise := kruisefake.NewSimpleClientset(other)
	wh := WorkloadSpreadWebhook(kruise.AppsV1alpha1(), true, nil, nil)
	res := wh.Admitter.Admit(context.Background(), spreadRequest(t, ref["zones"], nil))
	require.False(t, res.Allowed)
	assert.Equal(t, ReasonSpreadConflict, res.Reason)
	assert.Contains(t, res.Message, "WorkloadSpread first targets it already")

	// Updates: the target's group, kind and name are kept; other changes pass.
	old := ref["zones"]
	changed := old.DeepCopy()
	changed.Spec.TargetReference.Name = "other"
	res = wh.Admitter.Admit(context.Background(), spreadRequest(t, changed, old))
	require.False(t, res.Allowed)
	assert.Equal(t, ReasonForbiddenUpdate, res.Reason)
	version := old.DeepCopy()
	version.Spec.TargetReference.APIVersion = "apps.kruise.io/v1beta1"
	version.Spec.Subsets[0].MaxReplicas, version.Spec.Subsets[1].MaxReplicas = wsPct("40%"), wsPct("27%")
	res = wh.Admitter.Admit(context.Background(), spreadRequest(t, version, old))
	assert.True(t, res.Allowed, res.Message)

	// An update keeps what the stored object had already wrong (written while the webhook was off).
	bad := old.DeepCopy()
	bad.Spec.Subsets[2].MaxReplicas = wsPct("32%")
	relabelled := bad.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	res = wh.Admitter.Admit(context.Background(), spreadRequest(t, relabelled, bad))
	assert.True(t, res.Allowed, res.Message)
}

func TestWorkloadSpreadGateAndFailures(t *testing.T) {
	ws := referenceSpreads()["spot"]
	off := WorkloadSpreadWebhook(kruisefake.NewSimpleClientset().AppsV1alpha1(), false, nil, nil)
	res := off.Admitter.Admit(context.Background(), spreadRequest(t, ws, nil))
	require.False(t, res.Allowed)
	assert.Equal(t, ReasonWorkloadSpreadDisabled, res.Reason)
	assert.Equal(t, int32(403), res.Code)

	// The target unreadable: the patches are not tried, the spread admitted.
	broken := ws.DeepCopy()
	broken.Spec.TargetReference.Name = "broken"
	broken.Spec.Subsets[0].Patch.Raw = []byte(`{"spec":{"containers":"main"}}`)
	scope := &recordingScope{err: errors.New("configuration conflict")}
	wh := WorkloadSpreadWebhook(kruisefake.NewSimpleClientset().AppsV1alpha1(), true, fakeSpreadTargets{}, scope)
	res = wh.Admitter.Admit(context.Background(), spreadRequest(t, broken, nil))
	assert.True(t, res.Allowed, res.Message)
	require.Len(t, res.Warnings, 1, "the routing failure is a warning")
	assert.True(t, strings.Contains(res.Warnings[0], "could not route"))

	// A dry run is checked, not routed.
	scope = &recordingScope{}
	wh = WorkloadSpreadWebhook(kruisefake.NewSimpleClientset().AppsV1alpha1(), true, nil, scope)
	req := spreadRequest(t, ws, nil)
	req.DryRun = ptr.To(true)
	assert.True(t, wh.Admitter.Admit(context.Background(), req).Allowed)
	assert.Empty(t, scope.included)

	// Not a WorkloadSpread: allowed untouched.
	req = spreadRequest(t, ws, nil)
	req.Resource.Resource = "clonesets"
	assert.Equal(t, server.Allowed(), wh.Admitter.Admit(context.Background(), req))
}
