package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// policy sets the rolling update's podUpdatePolicy (v1alpha1: updateStrategy.type).
func policy(p appsv1beta1.CloneSetPodUpdateStrategyType) func(*appsv1beta1.CloneSet) {
	return func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = p }
}

// sized gives the main container cpu and memory requests and limits.
func sized(cpu, memory string) func(*appsv1beta1.CloneSet) {
	return func(cs *appsv1beta1.CloneSet) {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		cs.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
}

func withSidecar(cs *appsv1beta1.CloneSet) {
	cs.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "envoy:1.30", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
}

func TestCloneSetWebhookAtUpdate(t *testing.T) {
	inPlaceOnly := policy(appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType)
	tests := []struct {
		name     string
		old, new *appsv1beta1.CloneSet
		// reason and message are the refusal's; "" reason: admitted.
		reason  string
		message []string
	}{
		{
			name: "every updatable field",
			old:  cloneSet(),
			new: cloneSet(func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Replicas = ptr.To[int32](5)
				cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
				cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}}}
				cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a"}
				cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(1))
				cs.Spec.MinReadySeconds = 5
				cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
				cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
				cs.Spec.RevisionHistoryLimit = ptr.To[int32](3)
			}),
		},
		{
			// The CRD's CEL rule refuses it first; the webhook says the same.
			name: "selector changed",
			old:  cloneSet(),
			new: cloneSet(func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Selector.MatchLabels["tier"] = "front"
				cs.Spec.Template.Labels["tier"] = "front"
			}),
			reason: ReasonForbiddenUpdate,
			message: []string{`CloneSet.apps.kruise.io "web" is invalid: spec.selector: Forbidden: cannot be updated: only replicas, template, ` +
				`lifecycle, scaleStrategy, updateStrategy, minReadySeconds, progressDeadlineSeconds, volumeClaimTemplates, revisionHistoryLimit can`},
		},
		{
			name: "the create rules apply to the new object",
			old:  cloneSet(),
			new: cloneSet(func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
			}),
			reason: ReasonInvalidTemplate, message: []string{`spec.template.spec.activeDeadlineSeconds: Forbidden`},
		},
		{
			// Stored while the webhook was not called: still updatable.
			name: "a problem the stored object had already",
			old:  cloneSet(func(cs *appsv1beta1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-a"} }),
			new: cloneSet(func(cs *appsv1beta1.CloneSet) {
				cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-a"}
				cs.Spec.Replicas = ptr.To[int32](1)
			}),
		},
		{
			name: "a new problem beside one the stored object had",
			old:  cloneSet(func(cs *appsv1beta1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-a"} }),
			new: cloneSet(func(cs *appsv1beta1.CloneSet) {
				cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-a", "web-b", "web-b"}
			}),
			reason: ReasonDuplicatePodsToDelete, message: []string{`spec.scaleStrategy.podsToDelete[3]: Duplicate value: "web-b"`},
		},
		{
			name: "InPlaceOnly: images, cpu and memory, native sidecar images, template metadata",
			old:  cloneSet(inPlaceOnly, sized("500m", "256Mi"), withSidecar),
			new: cloneSet(inPlaceOnly, sized("1", "512Mi"), withSidecar, func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
				cs.Spec.Template.Spec.InitContainers[0].Image = "envoy:1.31"
				cs.Spec.Template.Labels["release"] = "2"
				cs.Spec.Template.Annotations = map[string]string{"note": "x"}
			}),
		},
		{
			name: "InPlaceOnly: env",
			old:  cloneSet(inPlaceOnly),
			new: cloneSet(inPlaceOnly, func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
			}),
			reason: ReasonNotInPlace,
			message: []string{`spec.template.spec.containers[main].env: Forbidden: changed, which cannot be applied to running pods, ` +
				`and the update strategy is InPlaceOnly: in place, only container images, the cpu and memory of the requests and limits ` +
				`a container already sets, and native sidecars' images can change (InPlaceIfPossible or ReCreate would recreate the pods instead)`},
		},
		{
			name: "InPlaceOnly: a container added",
			old:  cloneSet(inPlaceOnly),
			new: cloneSet(inPlaceOnly, func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{Name: "log", Image: "fluentbit"})
			}),
			reason: ReasonNotInPlace, message: []string{`spec.template.spec.containers: Forbidden: 2 containers instead of 1, which cannot be applied`},
		},
		{
			name:   "InPlaceOnly: a resource name added",
			old:    cloneSet(inPlaceOnly),
			new:    cloneSet(inPlaceOnly, sized("1", "512Mi")),
			reason: ReasonNotInPlace, message: []string{`spec.template.spec.containers[main].resources.limits: Forbidden: resource names added or removed`},
		},
		{
			name:   "InPlaceOnly: the policy set by the same update",
			old:    cloneSet(),
			new:    cloneSet(inPlaceOnly, func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "tmp"}} }),
			reason: ReasonNotInPlace, message: []string{`spec.template.spec.volumes: Forbidden: changed`},
		},
		{
			name: "InPlaceOnly left by the same update",
			old:  cloneSet(inPlaceOnly),
			new: cloneSet(policy(appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType), func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
			}),
		},
		{
			// OnDelete updates no pod: the pods get the template when replaced.
			// (OpenKruise's v1alpha1 webhook refuses OnDelete altogether.)
			name: "OnDelete ignores InPlaceOnly",
			old:  cloneSet(inPlaceOnly),
			new: cloneSet(inPlaceOnly, func(cs *appsv1beta1.CloneSet) {
				cs.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteCloneSetUpdateStrategyType
				cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
			}),
		},
	}
	for _, version := range versions {
		for _, tc := range tests {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				s := serve(t, CloneSetWebhook(InPlaceRules{Resize: true}))
				resp := s.send(t, cloneSetRequest(t, version, tc.new, tc.old))
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

// Only what the update brings is refused, and the problems of the stored
// object are not repeated.
func TestCloneSetWebhookUpdateNamesOnlyNewProblems(t *testing.T) {
	old := cloneSet(func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever })
	cs := cloneSet(func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		cs.Spec.Template.Spec.Containers[0].Image = ""
	})
	resp := serve(t, CloneSetWebhook(InPlaceRules{Resize: true})).send(t, cloneSetRequest(t, "v1beta1", cs, old))
	denied(t, resp, `spec.template.spec.containers[0].image: Required value`)
	assert.NotContains(t, resp.Result.Message, "restartPolicy")
}

// A stored object that does not decode is not the update's fault: the new
// object is judged alone, with a warning.
func TestCloneSetWebhookUpdateOfAnUndecodableObject(t *testing.T) {
	s := serve(t, CloneSetWebhook(InPlaceRules{Resize: true}))
	req := cloneSetRequest(t, "v1beta1", cloneSet(), cloneSet())
	req.OldObject.Raw = []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","ports":[{"containerPort":"80"}]}]}}}}`)
	resp := s.send(t, req)
	assert.True(t, resp.Allowed)
	require.Len(t, resp.Warnings, 1)
	assert.Contains(t, resp.Warnings[0], "kruise could not read the stored CloneSet (json: cannot unmarshal string")
	assert.Contains(t, resp.Warnings[0], "the update was checked as a new CloneSet, without the rules of updates")

	req.Object.Raw = inVersion(t, cloneSet(func(cs *appsv1beta1.CloneSet) { cs.Spec.Selector = nil }), "v1beta1")
	resp = s.send(t, req)
	denied(t, resp, `spec.selector: Required value`)
	assert.Len(t, resp.Warnings, 1)
}

// With gate InPlaceWorkloadVerticalScaling off the controllers do not resize pods, so InPlaceOnly
// refuses a cpu or memory change, as OpenKruise's webhook does; images still pass.
func TestCloneSetWebhookInPlaceOnlyWithoutResize(t *testing.T) {
	inPlaceOnly := policy(appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType)
	s := serve(t, CloneSetWebhook(InPlaceRules{Resize: false}))
	resp := s.send(t, cloneSetRequest(t, "v1beta1", cloneSet(inPlaceOnly, sized("1", "512Mi")), cloneSet(inPlaceOnly, sized("500m", "256Mi"))))
	denied(t, resp, `spec.template.spec.containers[main].resources: Forbidden: changed, which cannot be applied to running pods, `+
		`and the update strategy is InPlaceOnly: in place, only container images and native sidecars' images `+
		`(cpu and memory too with gate InPlaceWorkloadVerticalScaling) can change`)
	assert.EqualValues(t, 1, s.rejections(t, ReasonNotInPlace))

	resp = s.send(t, cloneSetRequest(t, "v1beta1", cloneSet(inPlaceOnly, sized("500m", "256Mi"), func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	}), cloneSet(inPlaceOnly, sized("500m", "256Mi"))))
	assert.True(t, resp.Allowed, "%+v", resp.Result)

	resp = serve(t, StatefulSetWebhook(InPlaceRules{Resize: false})).send(t, statefulSetRequest(t, "v1beta1",
		statefulSetSized(t, "1"), statefulSetSized(t, "500m")))
	denied(t, resp, `spec.template.spec.containers[main].resources: Forbidden: changed`)
	resp = serve(t, StatefulSetWebhook(InPlaceRules{Resize: true})).send(t, statefulSetRequest(t, "v1beta1",
		statefulSetSized(t, "1"), statefulSetSized(t, "500m")))
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

// statefulSetSized is an InPlaceOnly StatefulSet whose main container requests and is limited to
// cpu.
func statefulSetSized(t *testing.T, cpu string) *appsv1beta1.StatefulSet {
	t.Helper()
	return statefulSet(inPlaceSTS(appsv1beta1.InPlaceOnlyPodUpdateStrategyType, true), func(sts *appsv1beta1.StatefulSet) {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		sts.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	})
}
