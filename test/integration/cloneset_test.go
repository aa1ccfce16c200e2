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

const cloneSetNS = "cloneset-it"

// TestCloneSetAPI: a CloneSet written as v1alpha1 reads as v1beta1 through
// kruise's /convert, its scale subresource sets spec.replicas, and each CEL
// rule refuses an object that breaks it, saying why.
func TestCloneSetAPI(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cloneSetNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	serveCloneSetConversion(t, c)

	t.Run("Conversion", func(t *testing.T) { testCloneSetConversion(t, c) })
	t.Run("Scale", func(t *testing.T) { testCloneSetScale(t, c) })
	t.Run("Validation", func(t *testing.T) { testCloneSetValidation(t, c) })
}

// serveCloneSetConversion serves /convert on a loopback TLS server and
// points the clonesets CRD's conversion at it, as kruise-controller does
// with --webhook-conversion-crds.
func serveCloneSetConversion(t *testing.T, c *cluster) {
	convertThroughWebhook(t, c, "clonesets.apps.kruise.io")

	// The API server picks the new conversion up asynchronously: wait until
	// a v1alpha1 write reads back as v1beta1 with its policy. Each try writes
	// a new probe: one written before the webhook took over is stored with
	// its apiVersion merely rewritten, and reading it back never changes.
	tries := 0
	waitFor(t, "CloneSet conversion through the webhook", func(ctx context.Context) (bool, error) {
		tries++
		probe := cloneSet(fmt.Sprintf("probe-%d", tries))
		probe.Spec.UpdateStrategy.Type = v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		if _, err := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		defer func() {
			_ = c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Delete(ctx, probe.Name, metav1.DeleteOptions{})
		}()
		got, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Get(ctx, probe.Name, metav1.GetOptions{})
		return err == nil && got.Spec.UpdateStrategy.RollingUpdate != nil &&
			got.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy == v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType, nil
	})
}

func cloneSet(name string) *v1alpha1.CloneSet {
	return &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cloneSetNS},
		Spec: v1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
		},
	}
}

func testCloneSetConversion(t *testing.T, c *cluster) {
	cx := ctx(t)
	cs := cloneSet("convert")
	cs.Labels = map[string]string{v1alpha1.CloneSetScalingExcludePreparingDeleteKey: "true"}
	cs.Annotations = map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "2"}
	cs.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{
		Type:                  v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition:             ptr.To(intstr.FromString("50%")),
		InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 5},
	}
	created, err := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS).Create(cx, cs, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](1), created.Spec.Replicas, "replicas defaults to 1")
	assert.Equal(t, ptr.To[int32](10), created.Spec.RevisionHistoryLimit)
	assert.Equal(t, "20%", created.Spec.UpdateStrategy.MaxUnavailable.String())
	assert.Equal(t, "0", created.Spec.UpdateStrategy.MaxSurge.String())

	beta, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Get(cx, "convert", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1beta1.RollingUpdateCloneSetUpdateStrategyType, beta.Spec.UpdateStrategy.Type)
	ru := beta.Spec.UpdateStrategy.RollingUpdate
	require.NotNil(t, ru)
	assert.Equal(t, v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, ru.PodUpdatePolicy)
	assert.Equal(t, "50%", ru.Partition.String())
	assert.Equal(t, "20%", ru.MaxUnavailable.String())
	require.NotNil(t, ru.InPlaceUpdateStrategy)
	assert.Equal(t, int32(5), ru.InPlaceUpdateStrategy.GracePeriodSeconds)
	assert.Equal(t, ptr.To(intstr.FromInt32(2)), ru.InPlaceUpdateStrategy.ImagePreDownloadParallelism)
	assert.True(t, beta.Spec.ScaleStrategy.ExcludePreparingDelete)
	assert.True(t, beta.Spec.ScaleStrategy.EnablePVCReuse, "v1alpha1 reuses claims unless disablePVCReuse")
	assert.Empty(t, beta.Annotations, "nothing v1beta1 cannot say")

	// Written back as v1beta1, it reads as v1alpha1 as it was written.
	beta.Spec.UpdateStrategy.RollingUpdate.Paused = true
	_, err = c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Update(cx, beta, metav1.UpdateOptions{})
	require.NoError(t, err)
	alpha, err := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS).Get(cx, "convert", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, alpha.Spec.UpdateStrategy.Paused)
	created.Spec.UpdateStrategy.Paused = true
	assert.Equal(t, created.Spec, alpha.Spec)
	assert.Equal(t, created.Labels, alpha.Labels)
	assert.Equal(t, created.Annotations, alpha.Annotations)
}

func testCloneSetScale(t *testing.T, c *cluster) {
	cx := ctx(t)
	_, err := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS).Create(cx, cloneSet("scale"), metav1.CreateOptions{})
	require.NoError(t, err)
	scale, err := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS).GetScale(cx, "scale", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), scale.Spec.Replicas)

	scale.Spec.Replicas = 3
	_, err = c.kruise.AppsV1alpha1().CloneSets(cloneSetNS).UpdateScale(cx, "scale", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	got, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Get(cx, "scale", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](3), got.Spec.Replicas)

	// The scale subresource reads the selector the controller writes to status.
	got.Status.LabelSelector = "app=scale"
	_, err = c.kruise.AppsV1beta1().CloneSets(cloneSetNS).UpdateStatus(cx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	scaleB, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).GetScale(cx, "scale", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), scaleB.Spec.Replicas)
	assert.Equal(t, "app=scale", scaleB.Status.Selector)
}

func testCloneSetValidation(t *testing.T, c *cluster) {
	alphaClient := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS)
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.CloneSet)
		want   string
	}{
		{"unknown type", func(cs *v1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Type = "Rolling" }, "Unsupported value"},
		{"number in quotes", func(cs *v1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("5")) },
			"a number in quotes is refused"},
		{"negative maxSurge", func(cs *v1alpha1.CloneSet) { cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(-1)) },
			"must be a non-negative 32-bit number or a percentage"},
		{"deadline before ready", func(cs *v1alpha1.CloneSet) {
			cs.Spec.MinReadySeconds, cs.Spec.ProgressDeadlineSeconds = 30, ptr.To[int32](10)
		}, "progressDeadlineSeconds must be greater than minReadySeconds"},
		{"surge in place only", func(cs *v1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type, cs.Spec.UpdateStrategy.MaxSurge = v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, ptr.To(intstr.FromString("10%"))
		}, "updateStrategy.maxSurge must be 0 with type InPlaceOnly"},
		{"no way to progress", func(cs *v1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable, cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromString("0%")), ptr.To(intstr.FromInt32(0))
		}, "maxUnavailable and maxSurge cannot both be 0"},
		{"two priorities", func(cs *v1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{
				OrderPriority:  []pub.UpdatePriorityOrderTerm{{OrderedKey: "k"}},
				WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 1, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}},
			}
		}, "only one of weightPriority and orderPriority may be set"},
		{"scatter without key", func(cs *v1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.ScatterStrategy = pub.UpdateScatterStrategy{{Value: "v"}}
		}, "every scatterStrategy term needs a key"},
		{"bad pre-download parallelism", func(cs *v1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{ImagePreDownloadParallelism: ptr.To(intstr.FromString("all"))}
		}, "imagePreDownloadParallelism must be a non-negative 32-bit number or a percentage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cloneSet("bad")
			tc.mutate(cs)
			_, err := alphaClient.Create(ctx(t), cs, metav1.CreateOptions{})
			requireInvalid(t, err, tc.want)
		})
	}

	t.Run("OnDelete accepted", func(t *testing.T) {
		cs := cloneSet("on-delete")
		cs.Spec.UpdateStrategy.Type = v1alpha1.OnDeleteCloneSetUpdateStrategyType
		_, err := alphaClient.Create(ctx(t), cs, metav1.CreateOptions{})
		require.NoError(t, err)
		beta, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Get(ctx(t), "on-delete", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1beta1.OnDeleteCloneSetUpdateStrategyType, beta.Spec.UpdateStrategy.Type)
	})

	t.Run("selector immutable", func(t *testing.T) {
		cs, err := alphaClient.Create(ctx(t), cloneSet("selector"), metav1.CreateOptions{})
		require.NoError(t, err)
		cs.Spec.Selector.MatchLabels["tier"] = "web"
		_, err = alphaClient.Update(ctx(t), cs, metav1.UpdateOptions{})
		requireInvalid(t, err, "spec.selector is immutable")
	})

	t.Run("v1beta1 surge in place only", func(t *testing.T) {
		beta := &v1beta1.CloneSet{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-beta", Namespace: cloneSetNS},
			Spec: v1beta1.CloneSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}},
				UpdateStrategy: v1beta1.CloneSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType, MaxSurge: ptr.To(intstr.FromInt32(1)),
				}},
			},
		}
		_, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Create(ctx(t), beta, metav1.CreateOptions{})
		requireInvalid(t, err, "maxSurge must be 0 with podUpdatePolicy InPlaceOnly")
	})
}
