package webhookscope

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// key is the queue's only key: there is one scope to keep per controller.
const key = "scope"

// Want is what a kind's controller wants written, computed from its caches.
type Want struct {
	// Scope is every entry's expression.
	Scope Scope
	// Pending is the pending annotation's value to keep ("" removes it).
	Pending string
	// Next is when to compute again (the first pending entry's expiry); 0 is never.
	Next time.Duration
	// EventType, Reason and Message make the Event recorded on the configuration when the
	// scope changed ("" Reason: none); LogValues go into the log line.
	EventType, Reason, Message string
	LogValues                  []any
}

// WantFunc computes Want from the kind's caches, the configuration's current State and now.
type WantFunc func(ctx context.Context, current State, now time.Time) (Want, error)

// Config is what a Controller is built from.
type Config struct {
	// Name is the controller's name in logs, metrics and the queue.
	Name   string
	Client kubernetes.Interface
	Target Target
	Want   WantFunc
	// Recorder records Events on the configuration; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock times the queue and is Want's now; nil is the real clock.
	Clock clock.WithTicker
}

// Controller keeps one Target written. The kind's controller registers its own informers'
// handlers to call Enqueue; the configuration is watched here (a Helm upgrade puts the chart's
// condition back, and this puts the kind's back again).
type Controller struct {
	cfg      Config
	clock    clock.WithTicker
	queue    workqueue.TypedRateLimitingInterface[string]
	informer cache.SharedIndexInformer
	recorder record.EventRecorder
}

// New builds the controller; it does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Want == nil || cfg.Name == "" || cfg.Target.Configuration == "" || len(cfg.Target.Entries) == 0 {
		return nil, errors.New("webhookscope: Name, Client, Want, and the Target's Configuration and Entries are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// The one configuration by name (RBAC grants it by name only).
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector(metav1.ObjectNameField, cfg.Target.Configuration).String()
	}
	var inf cache.SharedIndexInformer
	switch cfg.Target.Kind {
	case Mutating:
		inf = admissioninformers.NewFilteredMutatingWebhookConfigurationInformer(cfg.Client, 0, cache.Indexers{}, byName)
	case Validating:
		inf = admissioninformers.NewFilteredValidatingWebhookConfigurationInformer(cfg.Client, 0, cache.Indexers{}, byName)
	default:
		return nil, fmt.Errorf("webhookscope: unknown configuration kind %q", cfg.Target.Kind)
	}
	c := &Controller{cfg: cfg, clock: clk, queue: workers.NewQueue(cfg.Name, clk), informer: inf, recorder: cfg.Recorder}
	if _, err := inf.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			m, ok := obj.(metav1.Object)
			return ok && m.GetName() == cfg.Target.Configuration
		},
		Handler: c.Handler(),
	}); err != nil {
		return nil, fmt.Errorf("adding %s event handler: %w", cfg.Target.Kind, err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return c.cfg.Name }

// Enqueue asks for a sync now; EnqueueAfter after d (gathering a burst of events into one write).
func (c *Controller) Enqueue()                     { c.queue.Add(key) }
func (c *Controller) EnqueueAfter(d time.Duration) { c.queue.AddAfter(key, d) }

// Handler enqueues on every event.
func (c *Controller) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.Enqueue() },
		UpdateFunc: func(any, any) { c.Enqueue() },
		DeleteFunc: func(any) { c.Enqueue() },
	}
}

// Len is how many keys are queued (0 or 1), for tests.
func (c *Controller) Len() int { return c.queue.Len() }

// Informer is the configuration's informer (Run starts it; tests start it themselves).
func (c *Controller) Informer() cache.SharedIndexInformer { return c.informer }

// Run keeps the condition with one worker (there is one key) until ctx ends.
func (c *Controller) Run(ctx context.Context, _ int) error {
	defer c.queue.ShutDown()
	go c.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return nil // cancelled
	}
	return events.While(ctx, c.cfg.Client, &c.recorder, func() {
		c.queue.Add(key)
		workers.Loop{Queue: c.queue, Sync: c.Sync, KeyName: "scope"}.Run(ctx, 1)
	})
}

// Sync writes what Want says when it differs from what the configuration holds. The write is
// conditional on the configuration's resourceVersion: an object admitted meanwhile (Include) is
// never written over; the conflict's watch event brings the sync back.
func (c *Controller) Sync(ctx context.Context, _ string) (time.Duration, error) {
	t := c.cfg.Target
	logger := klog.FromContext(ctx).WithValues("configuration", t.Configuration, "condition", t.Condition)
	obj, exists, err := c.informer.GetStore().GetByKey(t.Configuration)
	if err != nil {
		return 0, fmt.Errorf("reading %s %s: %w", t.Kind, t.Configuration, err)
	}
	if !exists {
		logger.V(4).Info("No webhook configuration; nothing to scope")
		return 0, nil
	}
	o, _ := obj.(runtime.Object)
	current, found := t.Read(o)
	if !found {
		logger.V(2).Info("The webhook configuration lacks the scoped entries; nothing to scope", "entries", t.Entries)
		return 0, nil
	}
	want, err := c.cfg.Want(ctx, current, c.clock.Now())
	if err != nil {
		return 0, err
	}
	if current.Scope.Equal(want.Scope) && current.Pending == want.Pending {
		return want.Next, nil
	}
	_, err = t.Write(ctx, c.cfg.Client, want.Scope, want.Pending, current.ResourceVersion)
	if apierrors.IsConflict(err) {
		logger.V(4).Info("The webhook configuration changed meanwhile; syncing again")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !current.Scope.Equal(want.Scope) {
		logger.Info("Updated the requests the webhooks are called for", append([]any{"entries", t.Entries}, want.LogValues...)...)
		if want.Reason != "" && c.recorder != nil {
			c.recorder.Eventf(current.Object, want.EventType, want.Reason, "%s", want.Message)
		}
	}
	return want.Next, nil
}
