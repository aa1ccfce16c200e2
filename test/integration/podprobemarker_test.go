package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/controller/podprobemarker"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

// startPodProbeMarker runs the NodePodProbe controller against the cluster until the test ends.
func startPodProbeMarker(t *testing.T, c *cluster, kube kubernetes.Interface) {
	t.Helper()
	_, sctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(sctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	ctrl, err := podprobemarker.New(podprobemarker.Config{
		Config:        ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		Pods:          factory.Core().V1().Pods(),
		Nodes:         factory.Core().V1().Nodes(),
		NodePodProbes: kf.Apps().V1alpha1().NodePodProbes(),
		Markers:       kf.Apps().V1alpha1().PodProbeMarkers(),
	})
	require.NoError(t, err)
	factory.Start(tctx.Done())
	kf.Start(tctx.Done())
	factory.WaitForCacheSync(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(tctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown(); kf.Shutdown() })
}

// The controller against a real API server: the NodePodProbe it writes passes the CRD's
// validation, is owned by its node; exec probes reach only the pods the requester may exec into
// (real SubjectAccessReviews against RBAC); the marker's finalizer and status; deleting the
// marker clears the spec and releases the finalizer.
func TestPodProbeMarkerInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	const ns = "ppm"
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	node, err := kube.CoreV1().Nodes().Create(ctx(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Nodes().Create(ctx(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "virtual",
		Labels: map[string]string{"type": "virtual-kubelet"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i, name := range []string{"p0", "p1"} {
		pod, err := kube.CoreV1().Pods(ns).Create(ctx(t), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0." + string(rune('1'+i)),
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}}
		_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx(t), pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	// "p1only" may exec into p1 only.
	_, err = kube.RbacV1().Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "p1only"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}, ResourceNames: []string{"p1"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "p1only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "p1only"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "p1only"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	startPodProbeMarker(t, c, kube)

	npps := c.kruise.AppsV1alpha1().NodePodProbes()
	waitFor(t, "node-a's NodePodProbe", func(ctx context.Context) (bool, error) {
		_, err := npps.Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil, notFoundIsWaiting(err)
	})
	npp, err := npps.Get(ctx(t), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: node.UID}}, npp.OwnerReferences)
	_, err = npps.Get(ctx(t), "virtual", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a virtual-kubelet node has none")

	ppm := &v1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "game", Annotations: map[string]string{
			nodeprobe.RequesterAnnotation: ejobaccess.Requester{Username: "p1only"}.Encode()}},
		Spec: v1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Probes: []v1alpha1.PodContainerProbe{
				{Name: "idle", ContainerName: "main", PodConditionType: "game.io/idle", Probe: v1alpha1.ContainerProbeSpec{Probe: corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/idle"}}}}}},
				{Name: "http", ContainerName: "main", PodConditionType: "game.io/http", Probe: v1alpha1.ContainerProbeSpec{Probe: corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}}},
			},
		},
	}
	ppms := c.kruise.AppsV1alpha1().PodProbeMarkers(ns)
	_, err = ppms.Create(ctx(t), ppm, metav1.CreateOptions{})
	require.NoError(t, err)

	probesOf := func(npp *v1alpha1.NodePodProbe) map[string][]string {
		out := map[string][]string{}
		for _, pp := range npp.Spec.PodProbes {
			for _, p := range pp.Probes {
				out[pp.Name] = append(out[pp.Name], p.Name)
			}
		}
		return out
	}
	want := map[string][]string{"p0": {"game#http"}, "p1": {"game#http", "game#idle"}}
	waitFor(t, "the probes listed, exec only in p1", func(ctx context.Context) (bool, error) {
		npp, err := npps.Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return assert.ObjectsAreEqual(want, probesOf(npp)), nil
	})
	npp, err = npps.Get(ctx(t), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromInt32(8080), npp.Spec.PodProbes[0].Probes[0].Probe.HTTPGet.Port, "the named port resolved")
	assert.Equal(t, "10.0.0.1", npp.Spec.PodProbes[0].IP)
	waitFor(t, "the marker's finalizer and status", func(ctx context.Context) (bool, error) {
		got, err := ppms.Get(ctx, "game", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(got.Finalizers, v1alpha1.PodProbeMarkerFinalizer) && got.Status.MatchedPods == 2 &&
			got.Status.ObservedGeneration == got.Generation, nil
	})

	require.NoError(t, ppms.Delete(ctx(t), "game", metav1.DeleteOptions{}))
	waitFor(t, "the marker gone, its probes off the NodePodProbe", func(ctx context.Context) (bool, error) {
		_, err := ppms.Get(ctx, "game", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, notFoundIsWaiting(err)
		}
		npp, err := npps.Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && len(npp.Spec.PodProbes) == 0, notFoundIsWaiting(err)
	})

	// The node goes: so does its NodePodProbe.
	require.NoError(t, kube.CoreV1().Nodes().Delete(ctx(t), "node-a", metav1.DeleteOptions{}))
	waitFor(t, "node-a's NodePodProbe deleted", func(ctx context.Context) (bool, error) {
		_, err := npps.Get(ctx, "node-a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), notFoundIsWaiting(err)
	})
}

// notFoundIsWaiting is err unless it is a NotFound (still waiting).
func notFoundIsWaiting(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
