package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// TestSidecarSetWebhookInAnAPIServer installs vsidecarset.kb.io as deploy/base
// renders it (cluster scope, its matchConditions) and checks that the API server sends
// SidecarSets of both versions to it: one that may be injected into the same pods as another and
// injects a container of the same name is refused with both names, by a real API server; a
// native sidecar upgraded by RollingUpdate, which OpenKruise refuses, is admitted.
func TestSidecarSetWebhookInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	addr, ca := serveValidatingWebhooks(t, kube, c.kruise)
	installValidatingWebhooks(t, kube, addr, ca)
	grantKruiseKinds(t, kube, tenantUser)
	tenant := as(t, c.config, tenantUser)

	mesh := func(name string) *v1beta1.SidecarSet {
		return &v1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}},
				Containers: []v1beta1.SidecarContainer{{Container: corev1.Container{Name: "proxy", Image: "envoy:1.31"}}},
			},
		}
	}
	_, err = c.kruise.AppsV1beta1().SidecarSets().Create(ctx(t), mesh("mesh"), metav1.CreateOptions{})
	require.NoError(t, err)

	// The API server calls a new configuration after a moment: wait for the first refusal.
	var refusal error
	waitFor(t, "a conflicting SidecarSet refused by vsidecarset.kb.io", func(ctx context.Context) (bool, error) {
		_, refusal = tenant.AppsV1beta1().SidecarSets().Create(ctx, mesh("mesh-v2"), metav1.CreateOptions{})
		if refusal == nil {
			require.NoError(t, tenant.AppsV1beta1().SidecarSets().Delete(ctx, "mesh-v2", metav1.DeleteOptions{}))
			return false, nil
		}
		return strings.Contains(refusal.Error(), "vsidecarset.kb.io"), nil
	})
	requireRefusedBy(t, refusal, "vsidecarset.kb.io", `SidecarSet.apps.kruise.io "mesh-v2" is invalid: spec.containers: Invalid value: "proxy": `+
		`SidecarSets mesh-v2 and mesh may select the same pods and both inject a container named "proxy"`)

	t.Run("v1alpha1, converted", func(t *testing.T) {
		serveSidecarSetConversion(t, c)
		alpha := v1alpha1.SidecarSetFromV1beta1(mesh("mesh-prod"))
		alpha.Spec.Namespace = "prod" // still overlaps mesh, which selects every namespace
		_, err := tenant.AppsV1alpha1().SidecarSets().Create(ctx(t), alpha, metav1.CreateOptions{})
		requireRefusedBy(t, err, "vsidecarset.kb.io", `SidecarSets mesh-prod and mesh may select the same pods`)
	})
	t.Run("native sidecar, RollingUpdate", func(t *testing.T) {
		native := mesh("log")
		native.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"logs": "on"}}
		native.Spec.Containers = nil
		native.Spec.InitContainers = []v1beta1.SidecarContainer{{Container: corev1.Container{
			Name: "log-agent", Image: "fluent-bit:3", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}}
		native.Spec.UpdateStrategy.Type = v1beta1.RollingUpdateSidecarSetStrategyType
		created, err := tenant.AppsV1beta1().SidecarSets().Create(ctx(t), native, metav1.CreateOptions{})
		require.NoError(t, err, "a native sidecar upgraded in place is admitted (OpenKruise refuses it, #1671)")

		created.Spec.InitContainers[0].Image = ""
		_, err = tenant.AppsV1beta1().SidecarSets().Update(ctx(t), created, metav1.UpdateOptions{})
		requireRefusedBy(t, err, "vsidecarset.kb.io", `spec.initContainers[0].image: Required value`)
	})
}
