package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/workloadspread"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

const wsNS = "ws-it"

// TestWorkloadSpreadInAnAPIServer: the controller counts a Deployment's pods (made by hand with
// the subset annotation the webhook would give them, owned by its ReplicaSet: no
// kube-controller-manager or kubelet here) into the WorkloadSpread's status and writes their
// deletion costs, so that a scale-in (the deletion order the workload controllers share, which
// reads the cost as the ReplicaSet controller does) removes the over-full subset's surplus and
// then the last subset's pods; the status follows the deletions.
func TestWorkloadSpreadInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wsNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	t.Cleanup(cancel)

	deploy, err := kube.AppsV1().Deployments(wsNS).Create(ctx(t), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](6),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	rs, err := kube.AppsV1().ReplicaSets(wsNS).Create(ctx(t), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: deploy.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](6), Selector: deploy.Spec.Selector, Template: deploy.Spec.Template},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	two := intstr.FromInt32(2)
	_, err = c.kruise.AppsV1alpha1().WorkloadSpreads(wsNS).Create(ctx(t), &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: "web-ws"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Subsets:         []appsv1alpha1.WorkloadSpreadSubset{{Name: "zone-a", MaxReplicas: &two}, {Name: "zone-b", MaxReplicas: &two}, {Name: "zone-c"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// zone-a holds one pod over its 2 (say, admitted while zone-b was full).
	for i, subset := range []string{"zone-a", "zone-a", "zone-a", "zone-b", "zone-b", "zone-c"} {
		matched, err := json.Marshal(appsv1alpha1.InjectWorkloadSpread{Name: "web-ws", Subset: subset})
		require.NoError(t, err)
		pod, err := kube.CoreV1().Pods(wsNS).Create(ctx(t), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-abc-%d", i), Labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
				Annotations:     map[string]string{appsv1alpha1.MatchedWorkloadSpreadAnnotation: string(matched)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}, NodeName: "node-" + subset},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Duration(10-i) * time.Minute))}}
		_, err = kube.CoreV1().Pods(wsNS).UpdateStatus(ctx(t), pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	factory := informers.NewSharedInformerFactory(kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	ctrl, err := workloadspread.New(workloadspread.Config{
		Config:          ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		WorkloadSpreads: kf.Apps().V1alpha1().WorkloadSpreads(),
		Pods:            factory.Core().V1().Pods(),
		Nodes:           factory.Core().V1().Nodes(),
		ReplicaSets:     factory.Apps().V1().ReplicaSets(),
		Deployments:     factory.Apps().V1().Deployments(),
		CloneSets:       kf.Apps().V1beta1().CloneSets(),
	})
	require.NoError(t, err)
	factory.Start(tctx.Done())
	kf.Start(tctx.Done())
	factory.WaitForCacheSync(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(tctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown(); kf.Shutdown() })

	counts := func(ctx context.Context) (map[string][2]int32, error) {
		ws, err := c.kruise.AppsV1alpha1().WorkloadSpreads(wsNS).Get(ctx, "web-ws", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string][2]int32{}
		for _, s := range ws.Status.SubsetStatuses {
			out[s.Name] = [2]int32{s.Replicas, s.MissingReplicas}
		}
		if len(ws.Status.VersionedSubsetStatuses["abc"]) != 3 {
			return nil, nil
		}
		return out, nil
	}
	want := map[string][2]int32{"zone-a": {3, 0}, "zone-b": {2, 0}, "zone-c": {1, -1}}
	waitFor(t, "the subsets' counts", func(ctx context.Context) (bool, error) {
		got, err := counts(ctx)
		return err == nil && assert.ObjectsAreEqual(want, got), err
	})
	costs := func(ctx context.Context) (map[string]string, []*corev1.Pod, error) {
		list, err := kube.CoreV1().Pods(wsNS).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": "web"}.String()})
		if err != nil {
			return nil, nil, err
		}
		out := map[string]string{}
		var pods []*corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				// No kubelet here finishes a graceful deletion.
				continue
			}
			out[p.Name] = p.Annotations[appsv1alpha1.PodDeletionCostAnnotation]
			pods = append(pods, p)
		}
		return out, pods, nil
	}
	// zone-a's surplus is the pod ready for the shortest time (web-abc-2).
	wantCosts := map[string]string{"web-abc-0": "300", "web-abc-1": "300", "web-abc-2": "-100", "web-abc-3": "200", "web-abc-4": "200", "web-abc-5": "100"}
	waitFor(t, "the deletion costs", func(ctx context.Context) (bool, error) {
		got, _, err := costs(ctx)
		return err == nil && assert.ObjectsAreEqual(wantCosts, got), err
	})

	// Scale in to 4: the deletion order deletes zone-a's surplus, then the last subset's pod.
	_, err = kube.AppsV1().Deployments(wsNS).Patch(ctx(t), "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, pods, err := costs(ctx(t))
	require.NoError(t, err)
	order := podorder.ForDeletion(pods, time.Now())
	for _, p := range order[:2] {
		require.NoError(t, kube.CoreV1().Pods(wsNS).Delete(ctx(t), p.Name, metav1.DeleteOptions{}))
	}
	assert.Equal(t, []string{"web-abc-2", "web-abc-5"}, []string{order[0].Name, order[1].Name})
	want = map[string][2]int32{"zone-a": {2, 0}, "zone-b": {2, 0}, "zone-c": {0, -1}}
	waitFor(t, "the counts after the scale-in", func(ctx context.Context) (bool, error) {
		got, err := counts(ctx)
		return err == nil && assert.ObjectsAreEqual(want, got), err
	})
	waitFor(t, "the costs after the scale-in", func(ctx context.Context) (bool, error) {
		got, _, err := costs(ctx)
		return err == nil && assert.ObjectsAreEqual(map[string]string{"web-abc-0": "300", "web-abc-1": "300", "web-abc-3": "200", "web-abc-4": "200"}, got), err
	})
}
