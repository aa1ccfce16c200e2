// Package sidecarsetscope keeps the SidecarSet injection webhook's matchConditions in step with
// the SidecarSets, so that the API server calls kruise only for pods some SidecarSet can select:
// a pod no SidecarSet selects is created even while kruise is down. It writes the one condition
// ConditionName of the one webhook entry and the annotation sidecarrules.PendingAnnotation, and nothing else
// of the configuration (the certificate manager writes the caBundles). The SidecarSet validating
// webhook writes the same two at admission (Includer), so that a SidecarSet's pods are routed
// before it is stored.
package sidecarsetscope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "sidecarset-scope"

const (
	// DefaultConfiguration and DefaultWebhook name the injection webhook's entry (the chart's).
	DefaultConfiguration = "kruise-mutating-webhook-configuration"
	DefaultWebhook       = "msidecarset.kb.io"
	// ConditionName is the matchCondition this controller owns in that entry.
	ConditionName = "sidecarset-selected"
	// ReasonScopeUpdated is the Normal Event on the configuration when the condition changed.
	ReasonScopeUpdated = "SidecarSetScopeUpdated"
)

// key is the queue's only key: there is one condition to keep.
const key = "scope"

// Config is what the controller is built from.
type Config struct {
	Client      kubernetes.Interface
	SidecarSets kruiseinformers.SidecarSetInformer
	// Configuration and Webhook default to DefaultConfiguration and DefaultWebhook.
	Configuration, Webhook string
	// Recorder records Events on the configuration; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock times the queue; nil is the real clock.
	Clock clock.WithTicker
}

// Controller writes the injection webhook's matchCondition.
type Controller struct {
	client        kubernetes.Interface
	sidecarSets   kruiselisters.SidecarSetLister
	configs       admissionlisters.MutatingWebhookConfigurationLister
	configuration string
	webhook       string
	recorder      record.EventRecorder
	clock         clock.PassiveClock
	queue         workqueue.TypedRateLimitingInterface[string]
	// configInformer watches the one configuration by name (RBAC grants it by name only); it is
	// the controller's own, started by Run.
	configInformer cache.SharedIndexInformer
}

// New builds the controller and registers its event handlers; it does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.SidecarSets == nil {
		return nil, errors.New("sidecarsetscope: Client and SidecarSets are required")
	}
	if cfg.Configuration == "" {
		cfg.Configuration = DefaultConfiguration
	}
	if cfg.Webhook == "" {
		cfg.Webhook = DefaultWebhook
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, cfg.Configuration).String()
	configInformer := admissioninformers.NewFilteredMutatingWebhookConfigurationInformer(cfg.Client, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = byName })
	c := &Controller{
		client: cfg.Client, sidecarSets: cfg.SidecarSets.Lister(),
		configs:       admissionlisters.NewMutatingWebhookConfigurationLister(configInformer.GetIndexer()),
		configuration: cfg.Configuration, webhook: cfg.Webhook, recorder: cfg.Recorder,
		clock: clk, queue: workers.NewQueue(Name, clk), configInformer: configInformer,
	}
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(key) },
		UpdateFunc: func(any, any) { c.queue.Add(key) },
		DeleteFunc: func(any) { c.queue.Add(key) },
	}
	if _, err := cfg.SidecarSets.Informer().AddEventHandler(enqueue); err != nil {
		return nil, fmt.Errorf("adding SidecarSet event handler: %w", err)
	}
	// The configuration is watched too: a Helm upgrade or kubectl apply puts the chart's
	// condition back, and this puts the SidecarSets' one back again.
	if _, err := configInformer.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			m, ok := obj.(metav1.Object)
			return ok && m.GetName() == c.configuration
		},
		Handler: enqueue,
	}); err != nil {
		return nil, fmt.Errorf("adding MutatingWebhookConfiguration event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run keeps the condition with one worker (there is one key) until ctx ends.
func (c *Controller) Run(ctx context.Context, _ int) error {
	defer c.queue.ShutDown()
	go c.configInformer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.configInformer.HasSynced) {
		return nil // cancelled
	}
	return events.While(ctx, c.client, &c.recorder, func() {
		c.queue.Add(key)
		workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "scope"}.Run(ctx, 1)
	})
}

// sync writes the condition of the SidecarSets in the cache, with the terms of those admitted
// that the cache does not show yet (sidecarrules.PendingAnnotation), when the entry's differs. The write is
// conditional on the configuration's resourceVersion: a SidecarSet admitted meanwhile
// (Include) is never written over by a condition computed without it.
func (c *Controller) sync(ctx context.Context, _ string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("configuration", c.configuration, "webhook", c.webhook)
	sets, err := c.sidecarSets.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing SidecarSets: %w", err)
	}
	cfg, err := c.configs.Get(c.configuration)
	if apierrors.IsNotFound(err) {
		// The webhooks are off (or not installed yet): nothing to scope.
		logger.V(4).Info("No webhook configuration; nothing to scope")
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", c.configuration, err)
	}
	current, found := currentExpression(cfg, c.webhook)
	if !found {
		logger.V(2).Info("The webhook configuration has no SidecarSet injection entry; nothing to scope")
		return 0, nil
	}
	pending, err := sidecarrules.ParsePending(cfg.Annotations)
	if err != nil {
		logger.Error(err, "Dropping the pending SidecarSets of the webhook configuration")
	}
	kept, next := pending.Settle(byName(sets), c.clock.Now())
	want := FromTerms(append(Terms(sets), kept.Terms()...))
	if current == want && equality.Semantic.DeepEqual(kept, pending) {
		return next, nil
	}
	_, err = writeScope(ctx, c.client, c.configuration, c.webhook, want, kept, cfg.ResourceVersion)
	if apierrors.IsConflict(err) {
		// Written meanwhile (a SidecarSet admitted): the watch brings it back here.
		logger.V(4).Info("The webhook configuration changed meanwhile; syncing again")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if current != want {
		active := len(Terms(sets))
		logger.Info("Updated the pods the SidecarSet injection webhook is called for", "sidecarSets", active, "pending", len(kept), "expressionLength", len(want))
		c.recorder.Eventf(cfg, corev1.EventTypeNormal, ReasonScopeUpdated,
			"webhook %s is called for pods the %d SidecarSets not paused can select (matchCondition %s, %d characters)", c.webhook, active, ConditionName, len(want))
	}
	return next, nil
}

// currentExpression is the entry's ConditionName expression ("" when it has none) and whether
// the entry exists.
func currentExpression(cfg *admissionregistrationv1.MutatingWebhookConfiguration, webhook string) (string, bool) {
	for _, w := range cfg.Webhooks {
		if w.Name != webhook {
			continue
		}
		for _, mc := range w.MatchConditions {
			if mc.Name == ConditionName {
				return mc.Expression, true
			}
		}
		return "", true
	}
	return "", false
}

// writeScope sets the condition and sidecarrules.PendingAnnotation with a strategic merge patch: webhooks
// merge by name and their matchConditions by name, so the other conditions, the other entries
// and the caBundles are left as the API server has them, whoever wrote them. resourceVersion,
// when set, makes the write conditional (409 Conflict if the configuration changed since).
func writeScope(ctx context.Context, client kubernetes.Interface, configuration, webhook, expression string, pending sidecarrules.PendingSet, resourceVersion string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	type condition struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	}
	type entry struct {
		Name            string      `json:"name"`
		MatchConditions []condition `json:"matchConditions"`
	}
	value, err := pending.Encode()
	if err != nil {
		return nil, err
	}
	var annotation any // null removes it
	if value != "" {
		annotation = value
	}
	meta := map[string]any{"annotations": map[string]any{sidecarrules.PendingAnnotation: annotation}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": meta,
		"webhooks": []entry{{Name: webhook, MatchConditions: []condition{{Name: ConditionName, Expression: expression}}}},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the matchConditions patch: %w", err)
	}
	out, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, configuration, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patching webhook %s of MutatingWebhookConfiguration %s: %w", webhook, configuration, err)
	}
	return out, nil
}

func byName(sets []*appsv1beta1.SidecarSet) map[string]*appsv1beta1.SidecarSet {
	out := make(map[string]*appsv1beta1.SidecarSet, len(sets))
	for _, ss := range sets {
		out[ss.Name] = ss
	}
	return out
}
