package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

const daemonSetNS = "daemonset-it"

// TestDaemonSetAPI: the schema defaults an Advanced DaemonSet, each CEL rule
// refuses an object that breaks it, saying why, and a v1alpha1 Surging
// DaemonSet reads as v1beta1 Standard with surge through kruise's /convert.
func TestDaemonSetAPI(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: daemonSetNS}}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("Defaults", func(t *testing.T) { testDaemonSetDefaults(t, c) })
	t.Run("Validation", func(t *testing.T) { testDaemonSetValidation(t, c) })
	serveDaemonSetConversion(t, c)
	t.Run("Conversion", func(t *testing.T) { testDaemonSetConversion(t, c) })
}

func daemonSet(name string) *v1beta1.DaemonSet {
	return &v1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: daemonSetNS},
		Spec: v1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
		},
	}
}

func testDaemonSetDefaults(t *testing.T, c *cluster) {
	created, err := c.kruise.AppsV1beta1().DaemonSets(daemonSetNS).Create(ctx(t), daemonSet("defaults"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "250", created.Spec.BurstReplicas.String())
	assert.Equal(t, ptr.To[int32](10), created.Spec.RevisionHistoryLimit)
	assert.Equal(t, v1beta1.RollingUpdateDaemonSetStrategyType, created.Spec.UpdateStrategy.Type)
	require.NotNil(t, created.Spec.UpdateStrategy.RollingUpdate)
	assert.Equal(t, v1beta1.StandardDaemonSetRollingUpdateType, created.Spec.UpdateStrategy.RollingUpdate.Type)
	assert.Nil(t, created.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, "left unset: 1 only when maxSurge is unset too")
}

func testDaemonSetValidation(t *testing.T, c *cluster) {
	betaClient := c.kruise.AppsV1beta1().DaemonSets(daemonSetNS)
	ru := func(ds *v1beta1.DaemonSet) *v1beta1.RollingUpdateDaemonSet {
		ds.Spec.UpdateStrategy.RollingUpdate = &v1beta1.RollingUpdateDaemonSet{}
		return ds.Spec.UpdateStrategy.RollingUpdate
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1beta1.DaemonSet)
		want   string
	}{
		{"Surging in v1beta1", func(ds *v1beta1.DaemonSet) { ru(ds).Type = "Surging" }, "Unsupported value"},
		{"percent partition in words", func(ds *v1beta1.DaemonSet) { ru(ds).Partition = ptr.To(intstr.FromString("half")) },
			"must be a non-negative 32-bit number or a percentage"},
		{"negative burst", func(ds *v1beta1.DaemonSet) { ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(-1)) },
			"must be a non-negative 32-bit number or a percentage"},
		{"surge and unavailable", func(ds *v1beta1.DaemonSet) {
			r := ru(ds)
			r.MaxSurge, r.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromString("10%"))
		}, "exactly one of updateStrategy.rollingUpdate.maxUnavailable and maxSurge must be non-zero"},
		{"neither", func(ds *v1beta1.DaemonSet) { ru(ds).MaxUnavailable = ptr.To(intstr.FromInt32(0)) },
			"exactly one of updateStrategy.rollingUpdate.maxUnavailable and maxSurge must be non-zero"},
		{"surge in place", func(ds *v1beta1.DaemonSet) {
			r := ru(ds)
			r.Type, r.MaxSurge, r.MaxUnavailable = v1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType, ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
		}, "maxSurge must be 0 with rollingUpdateType InPlaceIfPossible"},
		{"in-place hook", func(ds *v1beta1.DaemonSet) { ds.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{}} },
			"lifecycle.inPlaceUpdate is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := daemonSet("bad")
			tc.mutate(ds)
			_, err := betaClient.Create(ctx(t), ds, metav1.CreateOptions{})
			requireInvalid(t, err, tc.want)
		})
	}

	t.Run("Surging with unavailability", func(t *testing.T) {
		ds := v1alpha1.DaemonSetFromV1beta1(daemonSet("bad-surging"))
		ds.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.RollingUpdateDaemonSet{
			Type: v1alpha1.SurgingDaemonSetRollingUpdateType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		}
		_, err := c.kruise.AppsV1alpha1().DaemonSets(daemonSetNS).Create(ctx(t), ds, metav1.CreateOptions{})
		requireInvalid(t, err, "rollingUpdateType Surging takes maxUnavailable 0")
	})

	t.Run("selector immutable", func(t *testing.T) {
		ds, err := betaClient.Create(ctx(t), daemonSet("fixed"), metav1.CreateOptions{})
		require.NoError(t, err)
		ds.Spec.Selector.MatchLabels["tier"] = "x"
		_, err = betaClient.Update(ctx(t), ds, metav1.UpdateOptions{})
		requireInvalid(t, err, "spec.selector is immutable")
	})
}

// serveDaemonSetConversion points the daemonsets CRD's conversion at /convert
// served on a loopback TLS server, as kruise-controller does with
// --webhook-conversion-crds, and waits until the API server uses it.
func serveDaemonSetConversion(t *testing.T, c *cluster) {
	convertThroughWebhook(t, c, "daemonsets.apps.kruise.io")

	// Each try writes a new probe: one written before the webhook took over
	// is stored with its apiVersion merely rewritten.
	tries := 0
	waitFor(t, "DaemonSet conversion through the webhook", func(ctx context.Context) (bool, error) {
		tries++
		probe := v1alpha1.DaemonSetFromV1beta1(daemonSet(fmt.Sprintf("probe-%d", tries)))
		probe.Annotations = map[string]string{v1alpha1.ProgressiveCreatePodAnnotation: "true"}
		if _, err := c.kruise.AppsV1alpha1().DaemonSets(daemonSetNS).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		defer func() {
			_ = c.kruise.AppsV1beta1().DaemonSets(daemonSetNS).Delete(ctx, probe.Name, metav1.DeleteOptions{})
		}()
		got, err := c.kruise.AppsV1beta1().DaemonSets(daemonSetNS).Get(ctx, probe.Name, metav1.GetOptions{})
		return err == nil && got.Spec.ScaleStrategy != nil && got.Spec.ScaleStrategy.PartitionedScaling, nil
	})
}

func testDaemonSetConversion(t *testing.T, c *cluster) {
	cx := ctx(t)
	ds := v1alpha1.DaemonSetFromV1beta1(daemonSet("surging"))
	ds.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.RollingUpdateDaemonSet{Type: v1alpha1.SurgingDaemonSetRollingUpdateType}
	_, err := c.kruise.AppsV1alpha1().DaemonSets(daemonSetNS).Create(cx, ds, metav1.CreateOptions{})
	require.NoError(t, err)

	beta, err := c.kruise.AppsV1beta1().DaemonSets(daemonSetNS).Get(cx, "surging", metav1.GetOptions{})
	require.NoError(t, err)
	ru := beta.Spec.UpdateStrategy.RollingUpdate
	require.NotNil(t, ru)
	assert.Equal(t, v1beta1.StandardDaemonSetRollingUpdateType, ru.Type)
	assert.Equal(t, "1", ru.MaxSurge.String())
	assert.Equal(t, "0", ru.MaxUnavailable.String())

	alpha, err := c.kruise.AppsV1alpha1().DaemonSets(daemonSetNS).Get(cx, "surging", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.SurgingDaemonSetRollingUpdateType, alpha.Spec.UpdateStrategy.RollingUpdate.Type, "v1alpha1 reads Surging back")
	assert.NotContains(t, alpha.Annotations, v1alpha1.DaemonSetV1alpha1StrategiesAnnotation)
}
