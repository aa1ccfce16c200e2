package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/controller/nodepodprobe"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

// The marker controller against a real API server: results in a NodePodProbe's status become the
// pod's condition, labels and annotations (strategic merge of pods/status, merge patch of the
// metadata), flip with the result, and come off when the PodProbeMarker is deleted; the kubelet's
// conditions are left alone throughout.
func TestNodePodProbeMarksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	const ns = "probes"
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// A scheduled pod (no kubelet here: its node name is set at create) with the kubelet's Ready.
	pod, err := kube.CoreV1().Pods(ns).Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "game"}},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	pod.Status.Conditions = []corev1.PodCondition{ready}
	_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx(t), pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	// A uid in a patch body guards it: a pod recreated under the name is not patched (the uid is
	// immutable).
	_, err = kube.CoreV1().Pods(ns).Patch(ctx(t), "web", types.MergePatchType,
		[]byte(`{"metadata":{"uid":"not-this-pod","labels":{"x":"y"}}}`), metav1.PatchOptions{})
	require.True(t, apierrors.IsInvalid(err) || apierrors.IsConflict(err), "%v", err)

	ppm := &v1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "game", Namespace: ns},
		Spec: v1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}},
			Probes: []v1alpha1.PodContainerProbe{{
				Name: "idle", ContainerName: "main", PodConditionType: "game.io/idle",
				Probe: v1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"/idle"}}}}},
				MarkerPolicy: []v1alpha1.ProbeMarkerPolicy{
					{State: v1alpha1.ProbeSucceeded, Labels: map[string]string{"idle": "true"}, Annotations: map[string]string{"game.io/state": "idle"}},
					{State: v1alpha1.ProbeFailed, Labels: map[string]string{"idle": "false"}, Annotations: map[string]string{"game.io/busy": "yes"}},
				},
			}},
		},
	}
	_, err = c.kruise.AppsV1alpha1().PodProbeMarkers(ns).Create(ctx(t), ppm, metav1.CreateOptions{})
	require.NoError(t, err)
	npp, err := c.kruise.AppsV1alpha1().NodePodProbes().Create(ctx(t), &v1alpha1.NodePodProbe{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec: v1alpha1.NodePodProbeSpec{PodProbes: []v1alpha1.PodProbe{{Name: "web", Namespace: ns, UID: string(pod.UID),
			Probes: []v1alpha1.ContainerProbe{{Name: nodeprobe.ProbeName("game", "idle"), ContainerName: "main", Probe: ppm.Spec.Probes[0].Probe}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	report := func(state v1alpha1.ProbeState, msg string) {
		t.Helper()
		at := metav1.NewTime(time.Now().Truncate(time.Second))
		npp.Status.PodProbeStatuses = []v1alpha1.PodProbeStatus{{Name: "web", Namespace: ns, UID: string(pod.UID),
			ProbeStates: []v1alpha1.ContainerProbeState{{Name: nodeprobe.ProbeName("game", "idle"), State: state, Message: msg,
				LastProbeTime: at, LastTransitionTime: at}}}}
		npp, err = c.kruise.AppsV1alpha1().NodePodProbes().UpdateStatus(ctx(t), npp, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	_, sctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(sctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	ctrl, err := nodepodprobe.New(nodepodprobe.Config{
		Config:        ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		Pods:          factory.Core().V1().Pods(),
		Markers:       kf.Apps().V1alpha1().PodProbeMarkers(),
		NodePodProbes: kf.Apps().V1alpha1().NodePodProbes(),
	})
	require.NoError(t, err)
	factory.Start(tctx.Done())
	kf.Start(tctx.Done())
	factory.WaitForCacheSync(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(tctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown(); kf.Shutdown() })

	podWhen := func(what string, cond func(*corev1.Pod) bool) *corev1.Pod {
		t.Helper()
		var got *corev1.Pod
		waitFor(t, what, func(ctx context.Context) (bool, error) {
			got, err = kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && cond(got), err
		})
		return got
	}
	condition := func(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == t {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}

	report(v1alpha1.ProbeSucceeded, "exit 0")
	got := podWhen("the Succeeded marks", func(p *corev1.Pod) bool { return p.Labels["idle"] == "true" })
	assert.Equal(t, "idle", got.Annotations["game.io/state"])
	assert.NotEmpty(t, got.Annotations[nodeprobe.MarksAnnotation])
	if c := condition(got, "game.io/idle"); assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionTrue, c.Status)
		assert.Equal(t, nodepodprobe.Reason, c.Reason)
		assert.Equal(t, "exit 0", c.Message)
	}
	assert.NotNil(t, condition(got, corev1.PodReady))

	report(v1alpha1.ProbeFailed, "")
	got = podWhen("the Failed marks", func(p *corev1.Pod) bool { return p.Labels["idle"] == "false" })
	assert.Equal(t, "yes", got.Annotations["game.io/busy"])
	assert.NotContains(t, got.Annotations, "game.io/state")
	if c := condition(got, "game.io/idle"); assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionFalse, c.Status)
		assert.Empty(t, c.Message, "the old message cleared")
	}

	// Deleted (no finalizer here: the NodePodProbe writer is another controller): every mark off.
	require.NoError(t, c.kruise.AppsV1alpha1().PodProbeMarkers(ns).Delete(ctx(t), "game", metav1.DeleteOptions{}))
	got = podWhen("the marks taken off", func(p *corev1.Pod) bool { _, ok := p.Labels["idle"]; return !ok })
	assert.NotContains(t, got.Annotations, "game.io/busy")
	assert.NotContains(t, got.Annotations, nodeprobe.MarksAnnotation)
	assert.Nil(t, condition(got, "game.io/idle"))
	assert.NotNil(t, condition(got, corev1.PodReady), "the kubelet's condition stays")
	assert.Equal(t, map[string]string{"app": "game"}, got.Labels)
}
