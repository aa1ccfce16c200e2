// Package sidecarsetscope keeps the SidecarSet injection webhook's matchConditions in step with
// the SidecarSets, so that the API server calls kruise only for pods some SidecarSet can select:
// a pod no SidecarSet selects is created even while kruise is down. It writes the one condition
// ConditionName of the one webhook entry and the annotation sidecarrules.PendingAnnotation, and nothing else
// of the configuration (the certificate manager writes the caBundles), through
// pkg/controller/webhookscope (the loop the scope controllers share). The SidecarSet validating
// webhook writes the same two at admission (Includer), so that a SidecarSet's pods are routed
// before it is stored.
package sidecarsetscope

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
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
	sidecarSets kruiselisters.SidecarSetLister
	webhook     string
	scope       *webhookscope.Controller
	// configs reads the scope's cache of the configuration (tests).
	configs admissionlisters.MutatingWebhookConfigurationLister
}

// target is the condition of the entry webhook of configuration.
func target(configuration, webhook string) webhookscope.Target {
	if configuration == "" {
		configuration = DefaultConfiguration
	}
	if webhook == "" {
		webhook = DefaultWebhook
	}
	return webhookscope.Target{Kind: webhookscope.Mutating, Configuration: configuration, Entries: []string{webhook},
		Condition: ConditionName, PendingAnnotation: sidecarrules.PendingAnnotation}
}

// New builds the controller and registers its event handlers; it does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.SidecarSets == nil {
		return nil, errors.New("sidecarsetscope: Client and SidecarSets are required")
	}
	t := target(cfg.Configuration, cfg.Webhook)
	c := &Controller{sidecarSets: cfg.SidecarSets.Lister(), webhook: t.Entries[0]}
	scope, err := webhookscope.New(webhookscope.Config{Name: Name, Client: cfg.Client, Target: t, Want: c.want, Recorder: cfg.Recorder, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	c.scope = scope
	c.configs = admissionlisters.NewMutatingWebhookConfigurationLister(scope.Informer().GetIndexer())
	if _, err := cfg.SidecarSets.Informer().AddEventHandler(scope.Handler()); err != nil {
		return nil, fmt.Errorf("adding SidecarSet event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run keeps the condition until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error { return c.scope.Run(ctx, workers) }

// sync writes the condition once (webhookscope.Controller.Sync with want).
func (c *Controller) sync(ctx context.Context, k string) (time.Duration, error) {
	return c.scope.Sync(ctx, k)
}

// want is the condition of the SidecarSets in the cache, with the terms of those admitted that
// the cache does not show yet (sidecarrules.PendingAnnotation).
func (c *Controller) want(ctx context.Context, current webhookscope.State, now time.Time) (webhookscope.Want, error) {
	sets, err := c.sidecarSets.List(labels.Everything())
	if err != nil {
		return webhookscope.Want{}, fmt.Errorf("listing SidecarSets: %w", err)
	}
	pending, err := sidecarrules.ParsePending(map[string]string{sidecarrules.PendingAnnotation: current.Pending})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Dropping the pending SidecarSets of the webhook configuration")
	}
	kept, next := pending.Settle(byName(sets), now)
	encoded, err := kept.Encode()
	if err != nil {
		return webhookscope.Want{}, err
	}
	want := FromTerms(append(Terms(sets), kept.Terms()...))
	active := len(Terms(sets))
	return webhookscope.Want{
		Scope: webhookscope.Scope{c.webhook: want}, Pending: encoded, Next: next,
		EventType: corev1.EventTypeNormal, Reason: ReasonScopeUpdated,
		Message: fmt.Sprintf("webhook %s is called for pods the %d SidecarSets not paused can select (matchCondition %s, %d characters)",
			c.webhook, active, ConditionName, len(want)),
		LogValues: []any{"sidecarSets", active, "pending", len(kept), "expressionLength", len(want)},
	}, nil
}

func byName(sets []*appsv1beta1.SidecarSet) map[string]*appsv1beta1.SidecarSet {
	out := make(map[string]*appsv1beta1.SidecarSet, len(sets))
	for _, ss := range sets {
		out[ss.Name] = ss
	}
	return out
}
