package validate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// cloneSet is a valid v1beta1 CloneSet "web" (selector app=web, one
// container), changed by mods.
func cloneSet(mods ...func(*appsv1beta1.CloneSet)) *appsv1beta1.CloneSet {
	cs := &appsv1beta1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type:          appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: appsv1beta1.RecreateCloneSetPodUpdateStrategyType},
			},
		},
	}
	for _, m := range mods {
		m(cs)
	}
	return cs
}

// versions are the two forms a CloneSet is sent in: as is (v1beta1), and
// converted to v1alpha1 as a v1alpha1 client would have written it.
var versions = []string{"v1beta1", "v1alpha1"}

// inVersion is cs in version, as JSON.
func inVersion(t *testing.T, cs *appsv1beta1.CloneSet, version string) []byte {
	t.Helper()
	return encodeIn(t, cs, appsv1alpha1.CloneSetFromV1beta1(cs), version)
}

// encodeIn is obj (v1beta1), or alpha (obj converted) when version is
// v1alpha1, as JSON.
func encodeIn(t *testing.T, obj, alpha runtime.Object, version string) []byte {
	t.Helper()
	if version == "v1alpha1" {
		obj = alpha
	}
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	return raw
}

// cloneSetRequest is the request of a CREATE of cs (old nil) or an UPDATE
// from old, in version.
func cloneSetRequest(t *testing.T, version string, cs, old *appsv1beta1.CloneSet) *admissionv1.AdmissionRequest {
	t.Helper()
	return workloadRequest(t, "clonesets", "CloneSet", version, cs, old, appsv1alpha1.CloneSetFromV1beta1)
}

// workloadRequest is the request of a CREATE of obj (old nil) or an UPDATE
// from old, of a workload resource of kind, in version (toV1alpha1 converts
// a v1beta1 object).
func workloadRequest[S any, PS interface {
	*S
	runtime.Object
}, A runtime.Object](t *testing.T, resource, kind, version string, obj, old PS, toV1alpha1 func(PS) A) *admissionv1.AdmissionRequest {
	t.Helper()
	req := request(t, resource, kind, obj, version)
	req.Object.Raw = encodeIn(t, obj, toV1alpha1(obj), version)
	if old != nil {
		req.Operation = admissionv1.Update
		req.OldObject.Raw = encodeIn(t, old, toV1alpha1(old), version)
	}
	return req
}

func TestCloneSetWebhookAtCreate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*appsv1beta1.CloneSet)
		// reason and message are the refusal's; "" reason: admitted.
		reason  string
		message []string
	}{
		{name: "valid", mod: func(*appsv1beta1.CloneSet) {}},
		{
			name: "valid with everything the rules look at",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}
				cs.Spec.Template.Labels["tier"] = "front"
				cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
				cs.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
				cs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config"}}
				cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
				cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-b"}
				cs.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteCloneSetUpdateStrategyType
			},
		},
		{
			name: "no selector", mod: func(cs *appsv1beta1.CloneSet) { cs.Spec.Selector = nil },
			reason: ReasonInvalidSelector,
			message: []string{`CloneSet.apps.kruise.io "web" is invalid: spec.selector: Required value: ` +
				`a CloneSet finds its pods by this label selector`},
		},
		{
			name: "empty selector", mod: func(cs *appsv1beta1.CloneSet) { cs.Spec.Selector = &metav1.LabelSelector{} },
			reason:  ReasonInvalidSelector,
			message: []string{`spec.selector: Invalid value: "<none>": empty: it would select every pod of the namespace`},
		},
		{
			name: "malformed selector",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Like", Values: []string{"front"}}}
			},
			reason: ReasonInvalidSelector, message: []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Like"`},
		},
		{
			name: "selector does not match the template's labels",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Labels = map[string]string{"app": "api", "tier": "front"}
			},
			reason: ReasonInvalidSelector,
			message: []string{`spec.template.metadata.labels: Invalid value: "app=api,tier=front": ` +
				`does not match the selector "app=web": the CloneSet would not own the pods it creates`},
		},
		{
			name: "restartPolicy not Always", mod: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			reason:  ReasonInvalidTemplate,
			message: []string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`},
		},
		{
			name: "activeDeadlineSeconds", mod: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			reason: ReasonInvalidTemplate,
			message: []string{`spec.template.spec.activeDeadlineSeconds: Forbidden: ` +
				`a CloneSet's pods run until they are replaced; a deadline would fail them`},
		},
		{
			name: "no container", mod: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.Containers = nil },
			reason:  ReasonInvalidTemplate,
			message: []string{`spec.template.spec.containers: Required value: a pod needs at least one container`},
		},
		{
			name: "container names: empty, not a DNS label, repeated across init and regular containers",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "main", Image: "busybox"}}
				cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers,
					corev1.Container{Name: "Side_Car", Image: "envoy"}, corev1.Container{Image: "envoy"})
			},
			reason: ReasonInvalidTemplate,
			message: []string{
				`spec.template.spec.containers[0].name: Duplicate value: "main"`,
				`spec.template.spec.containers[1].name: Invalid value: "Side_Car": a lowercase RFC 1123 label`,
				`spec.template.spec.containers[2].name: Required value`,
			},
		},
		{
			name: "no image",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				cs.Spec.Template.Spec.Containers[0].Image = ""
			},
			reason: ReasonInvalidTemplate,
			message: []string{
				`spec.template.spec.initContainers[0].image: Required value: the pod could not start the container`,
				`spec.template.spec.containers[0].image: Required value`,
			},
		},
		{
			name: "claim templates: repeated, unnamed, not a DNS label, a template volume's name",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config"}}
				for _, n := range []string{"data", "data", "", "Logs", "config"} {
					cs.Spec.VolumeClaimTemplates = append(cs.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: n}})
				}
			},
			reason: ReasonInvalidVolumeClaimTemplates,
			message: []string{
				`spec.volumeClaimTemplates[1].metadata.name: Duplicate value: "data"`,
				`spec.volumeClaimTemplates[2].metadata.name: Required value`,
				`spec.volumeClaimTemplates[3].metadata.name: Invalid value: "Logs": a lowercase RFC 1123 label`,
				`spec.volumeClaimTemplates[4].metadata.name: Invalid value: "config": the template has a volume of this name, ` +
					`and each claim is mounted as the volume of its own name`,
			},
		},
		{
			name: "podsToDelete names a pod twice",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-b", "web-a"}
			},
			reason:  ReasonDuplicatePodsToDelete,
			message: []string{`spec.scaleStrategy.podsToDelete[2]: Duplicate value: "web-a"`},
		},
		{
			// Every problem is listed; the reason is the first rule's.
			name: "several problems",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Labels = nil
				cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
				cs.Spec.ScaleStrategy.PodsToDelete = []string{"x", "x"}
			},
			reason: ReasonInvalidSelector,
			message: []string{`[spec.template.metadata.labels: Invalid value: "": does not match the selector "app=web"`,
				`spec.template.spec.restartPolicy: Unsupported value: "Never"`, `spec.scaleStrategy.podsToDelete[1]: Duplicate value: "x"]`},
		},
		{
			name: "generateName names the CloneSet",
			mod: func(cs *appsv1beta1.CloneSet) {
				cs.Name, cs.GenerateName = "", "web-"
				cs.Spec.Selector = nil
			},
			reason: ReasonInvalidSelector, message: []string{`CloneSet.apps.kruise.io "web-" is invalid: spec.selector: Required value`},
		},
	}
	for _, version := range versions {
		for _, tc := range tests {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				s := serve(t, CloneSetWebhook(InPlaceRules{Resize: true}))
				resp := s.send(t, cloneSetRequest(t, version, cloneSet(tc.mod), nil))
				if tc.reason == "" {
					assert.True(t, resp.Allowed, "%+v", resp.Result)
					assert.Empty(t, resp.Warnings)
					return
				}
				denied(t, resp, tc.message...)
				assert.EqualValues(t, 1, s.rejections(t, tc.reason))
			})
		}
	}
}

// A schemaless part that does not decode (a port as a string) would break
// every typed client listing CloneSets once stored: refused, not admitted
// as the webhook's own failure.
func TestCloneSetWebhookRefusesAnUndecodableTemplate(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			s := serve(t, CloneSetWebhook(InPlaceRules{Resize: true}))
			req := cloneSetRequest(t, version, cloneSet(), nil)
			var obj map[string]any
			require.NoError(t, json.Unmarshal(req.Object.Raw, &obj))
			containers := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
			containers[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": "80"}}
			raw, err := json.Marshal(obj)
			require.NoError(t, err)
			req.Object.Raw = raw

			resp := s.send(t, req)
			denied(t, resp, `CloneSet.apps.kruise.io "web" is invalid: spec: Invalid value: does not read as a CloneSet, `+
				`as kruise-controller and every client would read it: json: cannot unmarshal string into Go struct field`,
				"containerPort of type int32")
			assert.EqualValues(t, 1, s.rejections(t, ReasonUndecodable))
		})
	}
}

func TestCloneSetWebhookLeavesOtherRequestsAlone(t *testing.T) {
	s := serve(t, CloneSetWebhook(InPlaceRules{Resize: true}))
	bad := cloneSet(func(cs *appsv1beta1.CloneSet) { cs.Spec.Selector = nil })
	del := cloneSetRequest(t, "v1beta1", bad, bad)
	del.Operation = admissionv1.Delete
	status := cloneSetRequest(t, "v1beta1", bad, cloneSet())
	status.SubResource = "status"
	scale := cloneSetRequest(t, "v1beta1", bad, cloneSet())
	scale.SubResource = "scale"
	other := cloneSetRequest(t, "v1beta1", bad, nil)
	other.Resource.Resource = "statefulsets"
	unknown := cloneSetRequest(t, "v1beta1", bad, nil)
	unknown.Kind.Version = "v2"
	for name, req := range map[string]*admissionv1.AdmissionRequest{
		"delete": del, "status": status, "scale": scale, "other resource": other, "unknown version": unknown,
	} {
		resp := s.send(t, req)
		assert.True(t, resp.Allowed, name)
		assert.Empty(t, resp.Warnings, name)
	}
}

// Every reason the webhook refuses with is declared, so that the rejection
// metric counts it under its name.
func TestCloneSetWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"Undecodable", "ForbiddenUpdate", "InvalidSelector", "InvalidTemplate",
		"InvalidVolumeClaimTemplates", "DuplicatePodsToDelete", "NotInPlace"}, CloneSetWebhook(InPlaceRules{Resize: true}).Reasons)
	assert.Equal(t, "/validate-apps-kruise-io-cloneset", CloneSetWebhook(InPlaceRules{Resize: true}).Path, "OpenKruise's path")
}
