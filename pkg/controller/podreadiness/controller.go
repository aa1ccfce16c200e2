// Package podreadiness keeps the KruisePodReady condition of pods that
// declare the KruisePodReady readiness gate: it sets the condition True on
// pods that have none yet, and releases the holders that hold a pod
// not-ready for a ContainerRecreateRequest that has finished or is gone.
//
// A pod lists the gate so that the CRR lifecycle controller can take it out of
// its Services before recreating its containers (unreadyGracePeriodSeconds).
// The kubelet keeps a pod with a readiness gate NotReady until the gate's
// condition is True, so without this controller such a pod never becomes
// Ready: OpenKruise sets the condition the same way, and templates written for
// it list the gate.
//
// A missing condition is written True. A False condition lists its holders
// (pkg/contract/readinessgate): the CRR lifecycle adds a request's entry when it
// admits it; this controller removes the entries of requests that are
// Completed or deleted, whenever it sees one, so a pod is released even if
// the request was deleted while no controller ran (a failover): the decision
// is taken from what the API holds, never from a remembered event. Entries of
// other users are left alone. Every write carries the resourceVersion read,
// so it cannot overwrite a change made meanwhile.
package podreadiness

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	appsinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "podreadiness"

// Reason is the reason of the condition this controller writes.
const Reason = "GateDeclared"

// Config is what the controller is built from.
type Config struct {
	Client kubernetes.Interface
	Pods   coreinformers.PodInformer
	// KruiseClient and CRRs let the controller release the holders of
	// finished or deleted ContainerRecreateRequests; both or neither.
	KruiseClient versioned.Interface
	CRRs         appsinformers.ContainerRecreateRequestInformer
	// Clock stamps the condition and times the queue's backoff; nil is the
	// real clock.
	Clock clock.WithTicker
}

// Controller keeps the KruisePodReady conditions.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	podLister    corelisters.PodLister
	crrLister    appslisters.ContainerRecreateRequestLister // nil: no CRR holders are released
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not
// call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Pods == nil {
		return nil, errors.New("podreadiness: Client and Pods are required")
	}
	if (cfg.KruiseClient == nil) != (cfg.CRRs == nil) {
		return nil, errors.New("podreadiness: KruiseClient and CRRs go together")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{client: cfg.Client, kruiseClient: cfg.KruiseClient, podLister: cfg.Pods.Lister(), clock: clk, queue: workers.NewQueue(Name, clk)}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, cur any) { c.podChanged(cur) },
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	if cfg.CRRs != nil {
		c.crrLister = cfg.CRRs.Lister()
		if _, err := cfg.CRRs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, cur any) { c.crrUpdated(cur) },
			DeleteFunc: c.crrDeleted,
		}); err != nil {
			return nil, fmt.Errorf("adding CRR event handler: %w", err)
		}
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

// podChanged queues a pod that needs the condition or holds a stale
// holder; every other pod update costs a slice scan and nothing else. The
// informer's initial list passes every pod through here, which is what
// releases, after a failover, pods whose request was deleted meanwhile.
func (c *Controller) podChanged(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok && (needsCondition(pod) || c.staleInCache(pod)) {
		if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			c.queue.Add(key)
		}
	}
}

// crrUpdated queues the pod of a request that has finished.
func (c *Controller) crrUpdated(obj any) {
	if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok && crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		c.queue.Add(crr.Namespace + "/" + crr.Spec.PodName)
	}
}

// crrDeleted queues the pod of a request that went away.
func (c *Controller) crrDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok {
		c.queue.Add(crr.Namespace + "/" + crr.Spec.PodName)
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
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !needsCondition(pod) {
		return 0, c.release(ctx, pod)
	}
	cond := corev1.PodCondition{
		Type:               appsv1alpha1.KruisePodReadyConditionType,
		Status:             corev1.ConditionTrue,
		Reason:             Reason,
		Message:            "the pod declares the KruisePodReady readiness gate; no ContainerRecreateRequest holds it not-ready",
		LastTransitionTime: metav1.NewTime(c.clock.Now()),
	}
	if err := c.patchCondition(ctx, pod, cond); err != nil {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Set the readiness-gate condition", "pod", klog.KObj(pod), "condition", cond.Type)
	return 0, nil
}
