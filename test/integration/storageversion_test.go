package integration

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/storageversion"
	"github.com/nodekruise/kruise/pkg/webhook/conversion"
)

// TestStorageVersionMigration: CloneSets stored as v1alpha1, as OpenKruise's released v1.9.0
// stores them, need /convert at every v1beta1 read. The migrator rewrites them in the storage
// version: afterwards v1beta1 reads work while /convert refuses everything, the CRD's
// storedVersions is v1beta1 alone, and every field reads back as it was written.
func TestStorageVersionMigration(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	cx := ctx(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cloneSetNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	refuse := refusableConversion(t, c, "clonesets.apps.kruise.io")
	clonesets := c.kruise.AppsV1alpha1().CloneSets(cloneSetNS)

	// The API server takes CRD changes up asynchronously. While /convert refuses, a v1alpha1
	// create succeeds exactly when v1alpha1 is the storage version (and conversion is the
	// webhook: a create with conversion None succeeds whatever the storage version).
	probes := 0
	var created []string // deleted once /convert answers again
	creatable := func(ctx context.Context) bool {
		probes++
		probe := cloneSet(fmt.Sprintf("probe-%d", probes))
		if _, err := clonesets.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return false
		}
		created = append(created, probe.Name)
		return true
	}
	refuse.Store(true)
	waitFor(t, "conversion through the webhook", func(ctx context.Context) (bool, error) { return !creatable(ctx), nil })
	setStorage(t, c, "clonesets.apps.kruise.io", "v1alpha1")
	waitFor(t, "CloneSets stored as v1alpha1", func(ctx context.Context) (bool, error) { return creatable(ctx), nil })
	old := cloneSet("written-by-openkruise")
	old.Spec.Replicas = ptr.To[int32](3)
	old.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType,
		Partition: ptr.To(intstr.FromString("50%")), MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	written, err := clonesets.Create(cx, old, metav1.CreateOptions{})
	require.NoError(t, err, "stored as v1alpha1 without /convert")
	setStorage(t, c, "clonesets.apps.kruise.io", "v1beta1")
	waitFor(t, "CloneSets stored as v1beta1", func(ctx context.Context) (bool, error) { return !creatable(ctx), nil })

	_, err = c.kruise.AppsV1beta1().CloneSets(cloneSetNS).Get(cx, old.Name, metav1.GetOptions{})
	require.Error(t, err, "stored as v1alpha1: reading v1beta1 needs /convert, which refuses")
	crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(cx, "clonesets.apps.kruise.io", metav1.GetOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"v1alpha1", "v1beta1"}, crd.Status.StoredVersions)

	refuse.Store(false)
	for _, name := range created {
		require.NoError(t, clonesets.Delete(cx, name, metav1.DeleteOptions{}))
	}
	objects, err := metadata.NewForConfig(c.config)
	require.NoError(t, err)
	m, err := storageversion.New(storageversion.Config{CRDs: c.apiext.ApiextensionsV1().CustomResourceDefinitions(), Objects: objects})
	require.NoError(t, err)
	_, lctx := ktesting.NewTestContext(t)
	require.NoError(t, m.Pass(lctx))

	crd, err = c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(cx, "clonesets.apps.kruise.io", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"v1beta1"}, crd.Status.StoredVersions)
	refuse.Store(true)
	list, err := c.kruise.AppsV1beta1().CloneSets(cloneSetNS).List(cx, metav1.ListOptions{})
	require.NoError(t, err, "every CloneSet is stored as v1beta1: reading v1beta1 needs no /convert")
	require.Len(t, list.Items, 1)
	assert.Equal(t, old.Name, list.Items[0].Name)
	refuse.Store(false)

	again, err := clonesets.Get(cx, old.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, written.Spec, again.Spec, "nothing lost")
	assert.Equal(t, written.Generation, again.Generation, "a rewrite is no change of spec")
	assert.NotEqual(t, written.ResourceVersion, again.ResourceVersion, "rewritten")

	require.NoError(t, m.Pass(lctx), "a second pass finds nothing to do")
}

// refusableConversion serves kruise's /convert for crd, as convertThroughWebhook does; while the
// returned flag is set it answers every request with an error.
func refusableConversion(t *testing.T, c *cluster, crd string) *atomic.Bool {
	t.Helper()
	h, err := conversion.NewHandler(conversion.Options{})
	require.NoError(t, err)
	var refuse atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			http.Error(w, "refused by the test", http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + conversion.Path
	crds := c.apiext.ApiextensionsV1().CustomResourceDefinitions()
	obj, err := crds.Get(ctx(t), crd, metav1.GetOptions{})
	require.NoError(t, err)
	obj.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	_, err = crds.Update(ctx(t), obj, metav1.UpdateOptions{})
	require.NoError(t, err)
	return &refuse
}

// setStorage makes version the storage version of crd.
func setStorage(t *testing.T, c *cluster, crd, version string) {
	t.Helper()
	crds := c.apiext.ApiextensionsV1().CustomResourceDefinitions()
	obj, err := crds.Get(ctx(t), crd, metav1.GetOptions{})
	require.NoError(t, err)
	for i := range obj.Spec.Versions {
		obj.Spec.Versions[i].Storage = obj.Spec.Versions[i].Name == version
	}
	_, err = crds.Update(ctx(t), obj, metav1.UpdateOptions{})
	require.NoError(t, err)
}
