package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// TestCloneSetWebhookInAnAPIServer installs vcloneset.kb.io as deploy/base renders
// it, with CloneSets converted through /convert, and checks what users see: refusals at create
// in both versions (a v1alpha1 object reaches the webhook as v1beta1), a refused and an admitted
// update under InPlaceOnly, and that an update leaving spec as is and kruise-controller's own
// writes are not sent (matchConditions the API server accepts and evaluates).
func TestCloneSetWebhookInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cloneSetNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	serveCloneSetConversion(t, c)
	addr, ca := serveValidatingWebhooks(t, kube, c.kruise)
	installValidatingWebhooks(t, kube, addr, ca)
	grantKruiseKinds(t, kube, tenantUser, controllerUser)
	tenant, controller := as(t, c.config, tenantUser), as(t, c.config, controllerUser)
	alpha, beta := tenant.AppsV1alpha1().CloneSets(cloneSetNS), tenant.AppsV1beta1().CloneSets(cloneSetNS)

	mismatched := func(name string) *v1alpha1.CloneSet {
		cs := cloneSet(name)
		cs.Spec.Template.Labels = map[string]string{"app": "other"}
		return cs
	}
	waitFor(t, "the CloneSet webhook to refuse a CloneSet", func(ctx context.Context) (bool, error) {
		_, err := alpha.Create(ctx, mismatched("probe-webhook"), metav1.CreateOptions{})
		if err == nil {
			require.NoError(t, alpha.Delete(ctx, "probe-webhook", metav1.DeleteOptions{}))
			return false, nil
		}
		return strings.Contains(err.Error(), "vcloneset.kb.io"), nil
	})

	t.Run("create", func(t *testing.T) {
		_, err := beta.Create(ctx(t), v1alpha1.CloneSetToV1beta1(mismatched("beta")), metav1.CreateOptions{})
		requireRefusedBy(t, err, "vcloneset.kb.io", `CloneSet.apps.kruise.io "beta" is invalid: `+
			`spec.template.metadata.labels: Invalid value: "app=other": does not match the selector "app=beta"`)

		cs := cloneSet("alpha")
		cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
		_, err = alpha.Create(ctx(t), cs, metav1.CreateOptions{})
		requireRefusedBy(t, err, "vcloneset.kb.io",
			`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`,
			`spec.template.spec.activeDeadlineSeconds: Forbidden`)

		// kruise-controller's own writes are not sent.
		_, err = controller.AppsV1alpha1().CloneSets(cloneSetNS).Create(ctx(t), mismatched("own"), metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("update", func(t *testing.T) {
		cs := cloneSet("inplace")
		cs.Spec.UpdateStrategy.Type = v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		_, err := alpha.Create(ctx(t), cs, metav1.CreateOptions{})
		require.NoError(t, err)

		got, err := alpha.Get(ctx(t), "inplace", metav1.GetOptions{})
		require.NoError(t, err)
		got.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
		_, err = alpha.Update(ctx(t), got, metav1.UpdateOptions{})
		requireRefusedBy(t, err, "vcloneset.kb.io",
			`spec.template.spec.containers[main].env: Forbidden: changed, which cannot be applied to running pods, and the update strategy is InPlaceOnly`)

		got, err = alpha.Get(ctx(t), "inplace", metav1.GetOptions{})
		require.NoError(t, err)
		got.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		_, err = alpha.Update(ctx(t), got, metav1.UpdateOptions{})
		require.NoError(t, err, "an image change is applied in place")
		stored, err := beta.Get(ctx(t), "inplace", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "nginx:1.28", stored.Spec.Template.Spec.Containers[0].Image)
		assert.Equal(t, v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType, stored.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy)

		// The CloneSet kruise-controller wrote without the webhook: an update that leaves
		// spec as is (a label, a finalizer) is not sent, one that changes spec is.
		own, err := alpha.Get(ctx(t), "own", metav1.GetOptions{})
		require.NoError(t, err)
		own.Labels = map[string]string{"team": "a"}
		own, err = alpha.Update(ctx(t), own, metav1.UpdateOptions{})
		require.NoError(t, err)
		own.Spec.Template.Spec.Containers[0].Image = ""
		_, err = alpha.Update(ctx(t), own, metav1.UpdateOptions{})
		requireRefusedBy(t, err, "vcloneset.kb.io", `spec.template.spec.containers[0].image: Required value`)
		assert.NotContains(t, err.Error(), "does not match the selector", "what the stored object had already is not held against the update")
	})
}

// requireRefusedBy checks that err is the API server's 422 for a refusal by webhook, holding
// every part of want.
func requireRefusedBy(t *testing.T, err error, webhook string, want ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "reason %s: %v", apierrors.ReasonForError(err), err)
	for _, w := range append([]string{`admission webhook "` + webhook + `" denied the request`}, want...) {
		require.Contains(t, err.Error(), w)
	}
}
