package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// daemonSet is a valid v1beta1 Advanced DaemonSet "agent" (selector
// app=agent, one container, a rolling update), changed by mods.
func daemonSet(mods ...func(*appsv1beta1.DaemonSet)) *appsv1beta1.DaemonSet {
	ds := &appsv1beta1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "agent:1"}}},
			},
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
					Type: appsv1beta1.StandardDaemonSetRollingUpdateType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
	for _, m := range mods {
		m(ds)
	}
	return ds
}

// daemonSetRequest is the request of a CREATE of ds (old nil) or an UPDATE
// from old, in version.
func daemonSetRequest(t *testing.T, version string, ds, old *appsv1beta1.DaemonSet) *admissionv1.AdmissionRequest {
	t.Helper()
	return workloadRequest(t, "daemonsets", "DaemonSet", version, ds, old, appsv1alpha1.DaemonSetFromV1beta1)
}

func rollingUpdate(f func(*appsv1beta1.RollingUpdateDaemonSet)) func(*appsv1beta1.DaemonSet) {
	return func(ds *appsv1beta1.DaemonSet) { f(ds.Spec.UpdateStrategy.RollingUpdate) }
}

func TestDaemonSetWebhook(t *testing.T) {
	tests := []struct {
		name     string
		old, new *appsv1beta1.DaemonSet
		// reason and message are the refusal's; "" reason: admitted.
		reason  string
		message []string
	}{
		{name: "valid", new: daemonSet()},
		{name: "valid: all of it at once, a partition of all nodes, a node selector", new: daemonSet(rollingUpdate(func(u *appsv1beta1.RollingUpdateDaemonSet) {
			u.MaxUnavailable = ptr.To(intstr.FromString("100%"))
			u.Partition = ptr.To(intstr.FromString("100%"))
			u.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}))},
		{name: "OnDelete ignores rollingUpdate", new: daemonSet(func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteDaemonSetStrategyType
			ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromString("150%"))
		})},
		{
			name:   "no selector",
			new:    daemonSet(func(ds *appsv1beta1.DaemonSet) { ds.Spec.Selector = nil }),
			reason: ReasonInvalidSelector,
			message: []string{`DaemonSet.apps.kruise.io "agent" is invalid: spec.selector: Required value: ` +
				`a DaemonSet finds its pods by this label selector`},
		},
		{
			name:    "restartPolicy not Always",
			new:     daemonSet(func(ds *appsv1beta1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			reason:  ReasonInvalidTemplate,
			message: []string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		},
		{
			name: "percentages beyond all nodes",
			new: daemonSet(rollingUpdate(func(u *appsv1beta1.RollingUpdateDaemonSet) {
				u.MaxUnavailable = ptr.To(intstr.FromString("150%"))
				u.Partition = ptr.To(intstr.FromString("101%"))
			})),
			reason: ReasonInvalidRollingUpdate,
			message: []string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be more than 100%`,
				`spec.updateStrategy.rollingUpdate.partition: Invalid value: "101%"`},
		},
		{
			// Admitted as OpenKruise admits it; the controller answers in an InvalidSpec Event.
			name: "malformed node selector",
			new: daemonSet(rollingUpdate(func(u *appsv1beta1.RollingUpdateDaemonSet) {
				u.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}
			})),
		},
		{
			name: "update to a template of its own",
			old:  daemonSet(),
			new: daemonSet(func(ds *appsv1beta1.DaemonSet) {
				ds.Spec.Template.Spec.Containers[0].Image = "agent:2"
				ds.Spec.MinReadySeconds = 5
			}),
		},
		{
			name:    "update that breaks the template",
			old:     daemonSet(),
			new:     daemonSet(func(ds *appsv1beta1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "" }),
			reason:  ReasonInvalidTemplate,
			message: []string{`spec.template.spec.containers[0].image: Required value`},
		},
		{
			name: "an update keeps a problem the stored object had",
			old:  daemonSet(rollingUpdate(func(u *appsv1beta1.RollingUpdateDaemonSet) { u.MaxUnavailable = ptr.To(intstr.FromString("150%")) })),
			new: daemonSet(rollingUpdate(func(u *appsv1beta1.RollingUpdateDaemonSet) { u.MaxUnavailable = ptr.To(intstr.FromString("150%")) }),
				func(ds *appsv1beta1.DaemonSet) { ds.Spec.MinReadySeconds = 5 }),
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				serve(t, DaemonSetWebhook()).judged(t, daemonSetRequest(t, version, tt.new, tt.old), tt.reason, tt.message...)
			})
		}
	}
}

func TestDaemonSetWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"Undecodable", "InvalidSelector", "InvalidTemplate", "InvalidRollingUpdate"}, DaemonSetWebhook().Reasons)
	assert.Equal(t, "/validate-apps-kruise-io-daemonset", DaemonSetWebhook().Path, "OpenKruise's path")
}
