package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// statefulSet is a valid v1beta1 Advanced StatefulSet "db" (selector app=db,
// one container, a claim template), changed by mods.
func statefulSet(mods ...func(*appsv1beta1.StatefulSet)) *appsv1beta1.StatefulSet {
	sts := &appsv1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:    ptr.To[int32](3),
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "postgres:17"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: appsv1beta1.RecreatePodUpdateStrategyType},
			},
		},
	}
	for _, m := range mods {
		m(sts)
	}
	return sts
}

// statefulSetRequest is the request of a CREATE of sts (old nil) or an
// UPDATE from old, in version.
func statefulSetRequest(t *testing.T, version string, sts, old *appsv1beta1.StatefulSet) *admissionv1.AdmissionRequest {
	t.Helper()
	return workloadRequest(t, "statefulsets", "StatefulSet", version, sts, old, appsv1alpha1.StatefulSetFromV1beta1)
}

func inPlaceSTS(policy appsv1beta1.PodUpdateStrategyType, gate bool) func(*appsv1beta1.StatefulSet) {
	return func(sts *appsv1beta1.StatefulSet) {
		sts.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = policy
		if gate {
			sts.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		}
	}
}

func TestStatefulSetWebhook(t *testing.T) {
	tests := []struct {
		name     string
		old, new *appsv1beta1.StatefulSet
		// reason and message are the refusal's; "" reason: admitted.
		reason  string
		message []string
	}{
		{name: "valid", new: statefulSet()},
		{name: "valid in place, with the readiness gate, ordinals and ranges reserved",
			new: statefulSet(inPlaceSTS(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, true), func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-5"), intstr.FromString("8")}
			})},
		{name: "OnDelete needs no readiness gate", new: statefulSet(func(sts *appsv1beta1.StatefulSet) {
			sts.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			sts.Spec.Template.Spec.ReadinessGates = nil
		})},
		{
			name: "selector does not match the template's labels",
			new:  statefulSet(func(sts *appsv1beta1.StatefulSet) { sts.Spec.Template.Labels = map[string]string{"app": "api"} }),
			message: []string{`StatefulSet.apps.kruise.io "db" is invalid: spec.template.metadata.labels: Invalid value: "app=api": ` +
				`does not match the selector "app=db": the StatefulSet would not own the pods it creates`},
			reason: ReasonInvalidSelector,
		},
		{
			name:    "activeDeadlineSeconds",
			new:     statefulSet(func(sts *appsv1beta1.StatefulSet) { sts.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](9) }),
			reason:  ReasonInvalidTemplate,
			message: []string{`spec.template.spec.activeDeadlineSeconds: Forbidden: a StatefulSet's pods run until they are replaced`},
		},
		{
			name: "claim template named twice",
			new: statefulSet(func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, sts.Spec.VolumeClaimTemplates[0])
			}),
			reason: ReasonInvalidVolumeClaimTemplates, message: []string{`spec.volumeClaimTemplates[1].metadata.name: Duplicate value: "data"`},
		},
		{
			name: "a backwards range and a word among reserveOrdinals",
			new: statefulSet(func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("5-3"), intstr.FromString("two")}
			}),
			reason: ReasonInvalidReserveOrdinals,
			message: []string{`spec.reserveOrdinals[1]: Invalid value: "5-3": the range ends before it starts`,
				`spec.reserveOrdinals[2]: Invalid value: "two": neither an ordinal nor a range`},
		},
		{
			name:   "in place without the readiness gate",
			new:    statefulSet(inPlaceSTS(appsv1beta1.InPlaceOnlyPodUpdateStrategyType, false)),
			reason: ReasonMissingReadinessGate,
			message: []string{`spec.template.spec.readinessGates: Required value: podUpdatePolicy InPlaceOnly updates pods in place, ` +
				`which needs the readiness gate {conditionType: InPlaceUpdateReady} in the template`},
		},
		{
			name:    "update of a fixed field",
			old:     statefulSet(),
			new:     statefulSet(func(sts *appsv1beta1.StatefulSet) { sts.Spec.ServiceName = "other" }),
			reason:  ReasonForbiddenUpdate,
			message: []string{`spec.serviceName: Forbidden: cannot be updated: only replicas, ordinals, template,`},
		},
		{
			name: "update of what may change",
			old:  statefulSet(),
			new: statefulSet(func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.Replicas = ptr.To[int32](5)
				sts.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 3}
				sts.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(4)}
				sts.Spec.Template.Spec.Containers[0].Image = "postgres:18"
				sts.Spec.RevisionHistoryLimit = ptr.To[int32](3)
			}),
		},
		{
			name: "InPlaceOnly: an image changes in place",
			old:  statefulSet(inPlaceSTS(appsv1beta1.InPlaceOnlyPodUpdateStrategyType, true)),
			new: statefulSet(inPlaceSTS(appsv1beta1.InPlaceOnlyPodUpdateStrategyType, true), func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.Template.Spec.Containers[0].Image = "postgres:18"
			}),
		},
		{
			name: "InPlaceOnly: a command does not",
			old:  statefulSet(inPlaceSTS(appsv1beta1.InPlaceOnlyPodUpdateStrategyType, true)),
			new: statefulSet(inPlaceSTS(appsv1beta1.InPlaceOnlyPodUpdateStrategyType, true), func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.Template.Spec.Containers[0].Command = []string{"postgres", "-d"}
			}),
			reason:  ReasonNotInPlace,
			message: []string{`spec.template.spec.containers[main].command: Forbidden:`, "the update strategy is InPlaceOnly"},
		},
		{
			name: "an update keeps a problem the stored object had",
			old: statefulSet(func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("5-3")}
			}),
			new: statefulSet(func(sts *appsv1beta1.StatefulSet) {
				sts.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("5-3")}
				sts.Spec.Replicas = ptr.To[int32](1)
			}),
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				serve(t, StatefulSetWebhook(InPlaceRules{Resize: true})).judged(t, statefulSetRequest(t, version, tt.new, tt.old), tt.reason, tt.message...)
			})
		}
	}
}

func TestStatefulSetWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"Undecodable", "ForbiddenUpdate", "InvalidSelector", "InvalidTemplate",
		"InvalidVolumeClaimTemplates", "InvalidReserveOrdinals", "MissingReadinessGate", "NotInPlace"}, StatefulSetWebhook(InPlaceRules{Resize: true}).Reasons)
	assert.Equal(t, "/validate-apps-kruise-io-statefulset", StatefulSetWebhook(InPlaceRules{Resize: true}).Path, "OpenKruise's path")
}
