// Package podreadiness sets the KruisePodReady condition True on pods that
// declare the KruisePodReady readiness gate and have no such condition yet.
//
// A pod lists the gate so that the CRR lifecycle controller can take it out of
// its Services before recreating its containers (unreadyGracePeriodSeconds).
// The kubelet keeps a pod with a readiness gate NotReady until the gate's
// condition is True, so without this controller such a pod never becomes
// Ready: OpenKruise sets the condition the same way, and templates written for
// it list the gate.
//
// Only a missing condition is written. A condition that exists, True or False,
// belongs to whoever set it (the CRR lifecycle sets it False, then True). The
// write carries the resourceVersion read, so it cannot overwrite a False that
// the CRR lifecycle set meanwhile.
package podreadiness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/readinessgate"
	"github.com/nodekruise/kruise/pkg/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "podreadiness"

// Reason is the reason of the condition this controller writes.
const Reason = "GateDeclared"

// Config is what the controller is built from.
type Config struct {
	Client kubernetes.Interface
	Pods   coreinformers.PodInformer
	// Clock stamps the condition and times the queue's backoff; nil is the
	// real clock.
	Clock clock.WithTicker
}

// Controller sets the missing KruisePodReady conditions.
type Controller struct {
	client    kubernetes.Interface
	podLister corelisters.PodLister
	clock     clock.WithTicker
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not
// call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Pods == nil {
		return nil, errors.New("podreadiness: Client and Pods are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{client: cfg.Client, podLister: cfg.Pods.Lister(), clock: clk, queue: workers.NewQueue(Name, clk)}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, cur any) { c.podChanged(cur) },
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes pods with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	defer c.queue.ShutDown()
	klog.FromContext(ctx).Info("Started workers", "workers", n)
	c.loop().Run(ctx, n)
	return nil
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "pod"}
}

// podChanged queues a pod that needs the condition; every other pod update
// costs a slice scan and nothing else.
func (c *Controller) podChanged(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok && needsCondition(pod) {
		if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			c.queue.Add(key)
		}
	}
}

// needsCondition reports whether the pod declares the gate, has no
// condition for it and is still alive.
func needsCondition(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed &&
		readinessgate.Declared(pod) && readinessgate.Condition(pod) == nil
}

// sync writes the condition of the pod named by key when it still lacks it.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil // not a key this controller queued; nothing to retry
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !needsCondition(pod)) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cond := corev1.PodCondition{
		Type:               appsv1alpha1.KruisePodReadyConditionType,
		Status:             corev1.ConditionTrue,
		Reason:             Reason,
		Message:            "the pod declares the KruisePodReady readiness gate; no ContainerRecreateRequest holds it not-ready",
		LastTransitionTime: metav1.NewTime(c.clock.Now()),
	}
	patch, err := json.Marshal(map[string]any{
		// The precondition: a pod changed since it was read (for instance a
		// CRR set the condition False) fails with a conflict and is read again.
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	if err != nil {
		return 0, fmt.Errorf("encoding the condition patch: %w", err)
	}
	_, err = c.client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("setting %s=True on pod %s: %w", cond.Type, key, err)
	}
	klog.FromContext(ctx).V(2).Info("Set the readiness-gate condition", "pod", klog.KObj(pod), "condition", cond.Type)
	return 0, nil
}
