package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

const workloadWebhookNS = "workload-webhook-it"

// TestWorkloadWebhooksInAnAPIServer installs vstatefulset.kb.io and vdaemonset.kb.io as
// deploy/base renders them and checks that the API server sends Advanced
// StatefulSets and DaemonSets of both versions to them, and returns their refusals to the user.
func TestWorkloadWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadWebhookNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	addr, ca := serveValidatingWebhooks(t, kube, c.kruise)
	installValidatingWebhooks(t, kube, addr, ca)
	grantKruiseKinds(t, kube, tenantUser)
	tenant := as(t, c.config, tenantUser)

	reserved := func(name string, entries ...intstr.IntOrString) *v1beta1.StatefulSet {
		sts := &v1beta1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workloadWebhookNS},
			Spec: v1beta1.StatefulSetSpec{
				ServiceName: name,
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "postgres:17"}}},
				},
				ReserveOrdinals: entries,
			},
		}
		return sts
	}
	// A v1alpha1 StatefulSet keeps its ranges in an annotation (v1alpha1 has only numbers): it
	// reaches the webhook as v1beta1 through /convert, as with the webhooks on.
	convertThroughWebhook(t, c, "statefulsets.apps.kruise.io")
	alphaRange := v1alpha1.StatefulSetFromV1beta1(reserved("alpha", intstr.FromString("9-2")))
	var refusal error
	waitFor(t, "a v1alpha1 StatefulSet converted and refused", func(ctx context.Context) (bool, error) {
		_, refusal = tenant.AppsV1alpha1().StatefulSets(workloadWebhookNS).Create(ctx, alphaRange, metav1.CreateOptions{})
		if refusal == nil {
			require.NoError(t, tenant.AppsV1alpha1().StatefulSets(workloadWebhookNS).Delete(ctx, "alpha", metav1.DeleteOptions{}))
			return false, nil
		}
		return strings.Contains(refusal.Error(), "vstatefulset.kb.io"), nil
	})

	t.Run("StatefulSet", func(t *testing.T) {
		requireRefusedBy(t, refusal, "vstatefulset.kb.io", `StatefulSet.apps.kruise.io "alpha" is invalid: `+
			`spec.reserveOrdinals[0]: Invalid value: "9-2": the range ends before it starts`)
		_, err := tenant.AppsV1beta1().StatefulSets(workloadWebhookNS).Create(ctx(t),
			reserved("ranges", intstr.FromInt32(1), intstr.FromString("3-5")), metav1.CreateOptions{})
		require.NoError(t, err)

		inPlace := reserved("inplace")
		inPlace.Spec.UpdateStrategy = v1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: v1beta1.InPlaceIfPossiblePodUpdateStrategyType}}
		_, err = tenant.AppsV1beta1().StatefulSets(workloadWebhookNS).Create(ctx(t), inPlace, metav1.CreateOptions{})
		requireRefusedBy(t, err, "vstatefulset.kb.io", `spec.template.spec.readinessGates: Required value: podUpdatePolicy InPlaceIfPossible`)
		inPlace.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		_, err = tenant.AppsV1beta1().StatefulSets(workloadWebhookNS).Create(ctx(t), inPlace, metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("DaemonSet", func(t *testing.T) {
		ds := daemonSet("agent")
		ds.Namespace = workloadWebhookNS
		ds.Spec.UpdateStrategy = v1beta1.DaemonSetUpdateStrategy{Type: v1beta1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromString("150%"))}}
		_, err := tenant.AppsV1beta1().DaemonSets(workloadWebhookNS).Create(ctx(t), ds, metav1.CreateOptions{})
		requireRefusedBy(t, err, "vdaemonset.kb.io", `DaemonSet.apps.kruise.io "agent" is invalid: `+
			`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be more than 100% of the DaemonSet's nodes`)

		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		created, err := tenant.AppsV1beta1().DaemonSets(workloadWebhookNS).Create(ctx(t), ds, metav1.CreateOptions{})
		require.NoError(t, err)
		created.Spec.Template.Spec.Containers[0].Image = ""
		_, err = tenant.AppsV1beta1().DaemonSets(workloadWebhookNS).Update(ctx(t), created, metav1.UpdateOptions{})
		requireRefusedBy(t, err, "vdaemonset.kb.io", `spec.template.spec.containers[0].image: Required value`)
	})
}
