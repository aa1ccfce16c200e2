package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/podunavailablebudget"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

const pubNS = "pub-it"

// TestPodUnavailableBudgetInAnAPIServer: the controller counts a Deployment's pods (made by hand,
// owned by its ReplicaSet: no kube-controller-manager or kubelet here) into the budget's status,
// and of callers racing to disrupt the Deployment's pods with one disruption allowed, the API
// server's resourceVersion check lets exactly one through, the controller writing meanwhile.
func TestPodUnavailableBudgetInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pubNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	t.Cleanup(cancel)

	const replicas = 6
	deploy, err := kube.AppsV1().Deployments(pubNS).Create(ctx(t), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	rs, err := kube.AppsV1().ReplicaSets(pubNS).Create(ctx(t), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: deploy.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](replicas), Selector: deploy.Spec.Selector, Template: deploy.Spec.Template},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var pods []*corev1.Pod
	for i := range replicas {
		pod, err := kube.CoreV1().Pods(pubNS).Create(ctx(t), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-abc-%d", i), Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		pod, err = kube.CoreV1().Pods(pubNS).UpdateStatus(ctx(t), pod, metav1.UpdateOptions{})
		require.NoError(t, err)
		pods = append(pods, pod)
	}
	_, err = c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubNS).Create(ctx(t), &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	factory := informers.NewSharedInformerFactory(kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	ctrl, err := podunavailablebudget.New(podunavailablebudget.Config{
		Config:      ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		Budgets:     kf.Policy().V1alpha1().PodUnavailableBudgets(),
		Pods:        factory.Core().V1().Pods(),
		ReplicaSets: factory.Apps().V1().ReplicaSets(),
		Deployments: factory.Apps().V1().Deployments(),
		Scale:       podunavailablebudget.NewScaleFunc(kube.Discovery()),
	})
	require.NoError(t, err)
	factory.Start(tctx.Done())
	kf.Start(tctx.Done())
	factory.WaitForCacheSync(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(tctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown(); kf.Shutdown() })

	budget := func(ctx context.Context) (*policyv1alpha1.PodUnavailableBudget, error) {
		return c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubNS).Get(ctx, "web-pub", metav1.GetOptions{})
	}
	waitFor(t, "the budget's status", func(ctx context.Context) (bool, error) {
		b, err := budget(ctx)
		if err != nil {
			return false, err
		}
		return b.Status.ObservedGeneration == b.Generation && b.Status.CurrentAvailable == replicas, nil
	})
	b, err := budget(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []int32{1, replicas, replicas - 1, replicas},
		[]int32{b.Status.UnavailableAllowed, b.Status.CurrentAvailable, b.Status.DesiredAvailable, b.Status.TotalReplicas})
	waitFor(t, "the pods annotated", func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			got, err := kube.CoreV1().Pods(pubNS).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Annotations[policyv1alpha1.PodRelatedPubAnnotation] != "web-pub" {
				return false, err
			}
		}
		return true, nil
	})

	// A kind no cache serves is read through its scale subresource: a ReplicationController
	// without pods yet still gets a status (OpenKruise #1857).
	_, err = kube.CoreV1().ReplicationControllers(pubNS).Create(ctx(t), &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "rc"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](3), Selector: map[string]string{"app": "rc"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rc"}}, Spec: deploy.Spec.Template.Spec}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubNS).Create(ctx(t), &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "rc-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"},
			MinAvailable:    ptr.To(intstr.FromString("50%")),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "the ReplicationController's budget status", func(ctx context.Context) (bool, error) {
		b, err := c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubNS).Get(ctx, "rc-pub", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return b.Status.ObservedGeneration == b.Generation && b.Status.TotalReplicas == 3 && b.Status.DesiredAvailable == 2, nil
	})

	// Callers on as many "replicas", each with a cache that says one disruption is allowed.
	admitter := podbudget.NewAdmitter(podbudget.AdmitterConfig{
		Client:  c.kruise,
		Budgets: kf.Policy().V1alpha1().PodUnavailableBudgets().Lister(),
		Owners:  podbudget.Listers{ReplicaSets: factory.Apps().V1().ReplicaSets().Lister()},
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var allowed, refused []string
	for _, p := range pods {
		wg.Go(func() {
			ok, reason, err := admitter.Admit(tctx, p, policyv1alpha1.PubEvictOperation, false)
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				allowed = append(allowed, p.Name)
			} else {
				refused = append(refused, reason)
			}
		})
	}
	wg.Wait()
	require.Len(t, allowed, 1, "refused: %v", refused)
	for _, r := range refused {
		assert.Contains(t, r, "PodUnavailableBudget pub-it/web-pub: no more unavailable pods allowed")
	}
	b, err = budget(ctx(t))
	require.NoError(t, err)
	assert.Contains(t, b.Status.DisruptedPods, allowed[0])
	assert.Len(t, b.Status.DisruptedPods, 1)
	assert.Equal(t, int32(0), b.Status.UnavailableAllowed)
}
