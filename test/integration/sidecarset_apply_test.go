package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/webhook/sidecarinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

const applyNS = "sidecarset-apply-it"

// `kubectl apply -f` of SidecarSets and the workload they select, in one file: the pods are
// created milliseconds after the SidecarSets, before the leader's cache has them. Each round
// creates two SidecarSets with a selector nothing routed yet (the second with the same selector
// as the first, so the routing does not change for it), then at once a pod they select: every
// pod must get both sidecars. Before, such pods were not sent to the webhook at all (the
// leader had not written the condition yet) or were injected from a cache that lacked one.
func TestSidecarSetsAppliedWithTheirPods(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: applyNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	t.Cleanup(cancel)

	caches := sidecarinjection.NewCaches(kube, c.kruise, "kruise-system", sidecarsetscope.DefaultConfiguration, nil)
	caches.Start(tctx)
	// Stop the informers before waiting for them: cleanups run last-registered first, and a
	// failure below would otherwise wait for ever here.
	t.Cleanup(func() { cancel(); caches.Shutdown() })
	waitFor(t, "the injection caches synced", func(ctx context.Context) (bool, error) { return caches.WaitSynced(ctx) == nil, nil })
	includer := &sidecarsetscope.Includer{Client: kube, SidecarSets: c.kruise.AppsV1beta1()}
	addr, ca := serveWebhooks(t, tctx, caches.Injector().Webhook(), sidecarinjection.SidecarSetWebhook(),
		validate.SidecarSetWebhook(c.kruise.AppsV1beta1(), kube.AppsV1(), "kruise-system", nil, includer))
	installInjectionWebhook(t, kube, addr, ca)
	installValidatingWebhooks(t, kube, addr, ca)
	installSidecarSetDefaults(t, kube, addr, ca)

	// The leader's scope controller runs meanwhile, as in kruise-controller: it must not narrow
	// the routing under a SidecarSet just admitted.
	sf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	scope, err := sidecarsetscope.New(sidecarsetscope.Config{Client: kube, SidecarSets: sf.Apps().V1beta1().SidecarSets()})
	require.NoError(t, err)
	sf.Start(tctx.Done())
	sf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- scope.Run(tctx, 1) }()
	t.Cleanup(func() { cancel(); <-done; sf.Shutdown() })

	sidecarSet := func(name, run string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"run": run}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: name + "-agent", Image: "busybox"}}},
			},
		}
	}
	// The API server reads a new configuration a moment after it is created: wait until
	// vsidecarset.kb.io is called (it refuses a SidecarSet without an image).
	waitFor(t, "vsidecarset.kb.io called", func(ctx context.Context) (bool, error) {
		bad := sidecarSet("probe", "probe")
		bad.Spec.Containers[0].Image = ""
		_, err := c.kruise.AppsV1beta1().SidecarSets().Create(ctx, bad, metav1.CreateOptions{})
		if err == nil {
			return false, c.kruise.AppsV1beta1().SidecarSets().Delete(ctx, "probe", metav1.DeleteOptions{})
		}
		return true, nil
	})

	// The create response carries the defaults and the hashes the pods will record, as
	// OpenKruise's does (msidecarset-defaults.kb.io, read after the validating one is called).
	var created *appsv1beta1.SidecarSet
	waitFor(t, "msidecarset-defaults.kb.io called", func(ctx context.Context) (bool, error) {
		probe := sidecarSet("defaults", "defaults")
		probe.Spec.InitContainers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: "busybox"}}}
		out, err := c.kruise.AppsV1beta1().SidecarSets().Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		if out.Annotations[sidecarrules.HashAnnotation] == "" {
			return false, c.kruise.AppsV1beta1().SidecarSets().Delete(ctx, "defaults", metav1.DeleteOptions{})
		}
		created = out
		return true, nil
	})
	assert.Equal(t, appsv1beta1.AfterAppContainerType, created.Spec.InitContainers[0].PodInjectPolicy)
	assert.Equal(t, appsv1beta1.BeforeAppContainerType, created.Spec.Containers[0].PodInjectPolicy)
	want, err := sidecarrules.Hash(created)
	require.NoError(t, err)
	assert.Equal(t, want, created.Annotations[sidecarrules.HashAnnotation], "the hash of the SidecarSet as stored")

	const rounds = 15
	var missed []string
	for i := range rounds {
		run := fmt.Sprint(i)
		for _, name := range []string{"a-" + run, "b-" + run} {
			_, err := c.kruise.AppsV1beta1().SidecarSets().Create(ctx(t), sidecarSet(name, run), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		pod, err := kube.CoreV1().Pods(applyNS).Create(ctx(t), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + run, Labels: map[string]string{"run": run}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		var names []string
		for _, ctr := range pod.Spec.Containers {
			names = append(names, ctr.Name)
		}
		if !assert.ElementsMatch(t, []string{"a-" + run + "-agent", "b-" + run + "-agent", "app"}, names, "pod %s", pod.Name) {
			missed = append(missed, pod.Name)
		}
	}
	require.Empty(t, missed, "pods created right after their SidecarSets without all their sidecars")

	// Once the leader's cache has them, nothing is pending and the condition is the cache's.
	waitFor(t, "the leader settled the routing", func(ctx context.Context) (bool, error) {
		cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, sidecarsetscope.DefaultConfiguration, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cfg.Annotations[sidecarrules.PendingAnnotation] == "", nil
	})
}

// installSidecarSetDefaults creates a MutatingWebhookConfiguration holding only
// msidecarset-defaults.kb.io of deploy/base/webhook.yaml, calling the server at addr.
func installSidecarSetDefaults(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
	t.Helper()
	installMutatingWebhook(t, kube, "sidecarset-defaults", baseMutatingWebhook(t, "msidecarset-defaults.kb.io", addr, ca))
}
