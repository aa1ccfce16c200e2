package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/resourcedistribution"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

// The ResourceDistribution controller against a real API server: 100 labelled namespaces get
// their copies, an unowned Secret of the name is reported and kept, a copy OpenKruise made (its
// owner reference, no label; found by the field-selector list) in a namespace outside the targets
// is deleted, and a namespace relabelled out loses its copy.
func TestResourceDistributionInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	const n = 100
	for i := range n {
		_, err := kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("team-%03d", i), Labels: map[string]string{"creds": "yes"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, ns := range []string{"theirs", "old"} {
		labels := map[string]string{"creds": "yes"}
		if ns == "old" {
			labels = nil
		}
		_, err := kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = kube.CoreV1().Secrets("theirs").Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"mine": "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rd, err := c.kruise.AppsV1alpha1().ResourceDistributions().Create(ctx(t), &v1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: "dist"},
		Spec: v1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"stringData":{"token":"v1"}}`)},
			Targets:  v1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"creds": "yes"}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets("old").Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ResourceDistribution", Name: "dist", UID: rd.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}, StringData: map[string]string{"token": "v0"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, sctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(sctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	ctrl, err := resourcedistribution.New(resourcedistribution.Config{
		Config:        ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		Distributions: kf.Apps().V1alpha1().ResourceDistributions(),
		Namespaces:    factory.Core().V1().Namespaces(),
	})
	require.NoError(t, err)
	factory.Start(tctx.Done())
	kf.Start(tctx.Done())
	factory.WaitForCacheSync(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(tctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown(); kf.Shutdown() })

	status := func(what string, ok func(v1alpha1.ResourceDistributionStatus) bool) {
		t.Helper()
		waitFor(t, what, func(ctx context.Context) (bool, error) {
			got, err := c.kruise.AppsV1alpha1().ResourceDistributions().Get(ctx, "dist", metav1.GetOptions{})
			return err == nil && ok(got.Status), err
		})
	}
	status("every labelled namespace but theirs holds a copy", func(s v1alpha1.ResourceDistributionStatus) bool {
		return s.Desired == n+1 && s.Succeeded == n && len(s.Conditions) == 6 &&
			assert.ObjectsAreEqual([]string{"theirs"}, s.Conditions[4].FailedNamespaces)
	})
	for i := range n {
		s, err := kube.CoreV1().Secrets(fmt.Sprintf("team-%03d", i)).Get(ctx(t), "creds", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "v1", string(s.Data["token"]))
		assert.Equal(t, "true", s.Labels[resourcedistribution.CopyLabel])
		assert.True(t, metav1.IsControlledBy(s, rd))
	}
	theirs, err := kube.CoreV1().Secrets("theirs").Get(ctx(t), "creds", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"mine": []byte("x")}, theirs.Data)
	assert.Empty(t, theirs.OwnerReferences)
	waitFor(t, "OpenKruise's copy in a namespace outside the targets deleted", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Secrets("old").Get(ctx, "creds", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})

	_, err = kube.CoreV1().Namespaces().Patch(ctx(t), "team-007", types.MergePatchType, []byte(`{"metadata":{"labels":{"creds":null}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitFor(t, "the relabelled namespace's copy deleted", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Secrets("team-007").Get(ctx, "creds", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	status("one namespace fewer", func(s v1alpha1.ResourceDistributionStatus) bool { return s.Desired == n && s.Succeeded == n-1 })
}
