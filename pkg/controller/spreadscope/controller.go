// Package spreadscope keeps WorkloadSpread's pod webhooks' matchConditions in step with the
// WorkloadSpreads, so that the API server calls kruise only for pods of the workloads some
// WorkloadSpread targets: mworkloadspread.kb.io (pod CREATE, in the mutating configuration),
// vworkloadspread-pod.kb.io (pod DELETE of a placed pod) and vworkloadspread-eviction.kb.io
// (pods/eviction CREATE, by the pod's name) in the validating one. Every other pod's create,
// delete and eviction never reach kruise, even while it is down.
//
// It writes the one condition ConditionName of those entries and PendingAnnotation on both
// configurations, through pkg/controller/webhookscope. The WorkloadSpread validating webhook
// writes the same at admission (Includer), so that a spread applied with its workload places the
// workload's first pods.
package spreadscope

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	wsinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	wslisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
)

// Name is the controller's name in logs and metrics.
const Name = "workloadspread-scope"

const (
	// DefaultMutatingConfiguration and DefaultValidatingConfiguration are the chart's.
	DefaultMutatingConfiguration   = "kruise-mutating-webhook-configuration"
	DefaultValidatingConfiguration = "kruise-validating-webhook-configuration"
	// CreateWebhook, DeleteWebhook and EvictionWebhook are the entries.
	CreateWebhook   = "mworkloadspread.kb.io"
	DeleteWebhook   = "vworkloadspread-pod.kb.io"
	EvictionWebhook = "vworkloadspread-eviction.kb.io"
	// ConditionName is the matchCondition this controller owns in the three entries.
	ConditionName = "workloadspread-targeted"
	// PendingAnnotation, on both configurations, holds the spreads admitted (Includer) that the
	// leader's cache may not have yet, with their terms, for at most PendingTTL.
	PendingAnnotation = "workloadspread.kruise.io/pending-scope"
	PendingTTL        = 2 * time.Minute
	// ReasonScopeUpdated is the Normal Event on a configuration when its conditions changed;
	// ReasonScopeCoarse the Warning when they fell back to the spreads' namespaces.
	ReasonScopeUpdated = "WorkloadSpreadScopeUpdated"
	ReasonScopeCoarse  = "WorkloadSpreadScopeCoarse"
)

// Targets are the conditions kept, in the mutating and the validating configuration.
func Targets(mutating, validating string) (create, del webhookscope.Target) {
	if mutating == "" {
		mutating = DefaultMutatingConfiguration
	}
	if validating == "" {
		validating = DefaultValidatingConfiguration
	}
	return webhookscope.Target{Kind: webhookscope.Mutating, Configuration: mutating, Entries: []string{CreateWebhook},
			Condition: ConditionName, PendingAnnotation: PendingAnnotation},
		webhookscope.Target{Kind: webhookscope.Validating, Configuration: validating, Entries: []string{DeleteWebhook, EvictionWebhook},
			Condition: ConditionName, PendingAnnotation: PendingAnnotation}
}

// pendingEntry is one admitted spread's terms and when it was admitted.
type pendingEntry struct {
	Terms `json:",inline"`
	Since metav1.Time `json:"since"`
}

// Config is what the controller is built from.
type Config struct {
	Client  kubernetes.Interface
	Spreads wsinformers.WorkloadSpreadInformer
	// MutatingConfiguration and ValidatingConfiguration default to the chart's.
	MutatingConfiguration, ValidatingConfiguration string
	// Recorder records Events on the configurations; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock times the queues and the pending entries; nil is the real clock.
	Clock clock.WithTicker
}

// Controller keeps the conditions of both configurations.
type Controller struct {
	spreads        wslisters.WorkloadSpreadLister
	create, delete *webhookscope.Controller
}

// New builds the controller and registers its event handlers; it does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Spreads == nil {
		return nil, errors.New("spreadscope: Client and Spreads are required")
	}
	c := &Controller{spreads: cfg.Spreads.Lister()}
	ct, dt := Targets(cfg.MutatingConfiguration, cfg.ValidatingConfiguration)
	var err error
	if c.create, err = webhookscope.New(webhookscope.Config{Name: Name + "-create", Client: cfg.Client, Target: ct, Want: c.want(ct),
		Recorder: cfg.Recorder, Clock: cfg.Clock}); err != nil {
		return nil, err
	}
	if c.delete, err = webhookscope.New(webhookscope.Config{Name: Name + "-delete", Client: cfg.Client, Target: dt, Want: c.want(dt),
		Recorder: cfg.Recorder, Clock: cfg.Clock}); err != nil {
		return nil, err
	}
	for _, s := range []*webhookscope.Controller{c.create, c.delete} {
		if _, err := cfg.Spreads.Informer().AddEventHandler(s.Handler()); err != nil {
			return nil, fmt.Errorf("adding WorkloadSpread event handler: %w", err)
		}
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run keeps both configurations' conditions until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*webhookscope.Controller{c.create, c.delete} {
		wg.Go(func() { errs[i] = s.Run(ctx, workers) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// want is target's conditions of the spreads in the cache, with those admitted that the cache
// does not show yet.
func (c *Controller) want(t webhookscope.Target) webhookscope.WantFunc {
	return func(ctx context.Context, current webhookscope.State, now time.Time) (webhookscope.Want, error) {
		list, err := c.spreads.List(labels.Everything())
		if err != nil {
			return webhookscope.Want{}, fmt.Errorf("listing WorkloadSpreads: %w", err)
		}
		pending, err := webhookscope.ParsePending[pendingEntry](current.Pending)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Dropping the pending WorkloadSpreads of the webhook configuration")
		}
		cached := map[string]bool{}
		var terms []Terms
		var namespaces []string
		for _, ws := range list {
			cached[ws.Namespace+"/"+ws.Name] = true
			if t := SpreadTerms(ws); t != (Terms{}) {
				terms = append(terms, t)
				namespaces = append(namespaces, ws.Namespace)
			}
		}
		kept, next := settle(pending, cached, now)
		for key, p := range kept {
			terms = append(terms, p.Terms)
			namespaces = append(namespaces, webhookscope.NamespaceOf(key))
		}
		encoded, err := webhookscope.EncodePending(kept)
		if err != nil {
			return webhookscope.Want{}, err
		}
		create, del, eviction, coarse := Expressions(terms, namespaces)
		w := webhookscope.Want{Pending: encoded, Next: next, EventType: corev1.EventTypeNormal, Reason: ReasonScopeUpdated,
			LogValues: []any{"workloadSpreads", len(list), "pending", len(kept), "coarse", coarse}}
		if t.Kind == webhookscope.Mutating {
			w.Scope = webhookscope.Scope{CreateWebhook: create}
		} else {
			w.Scope = webhookscope.Scope{DeleteWebhook: del, EvictionWebhook: eviction}
		}
		w.Message = fmt.Sprintf("webhooks %s are called for the pods of the workloads %d WorkloadSpreads target (matchCondition %s)",
			strings.Join(t.Entries, " and "), len(terms), ConditionName)
		if coarse {
			w.EventType, w.Reason = corev1.EventTypeWarning, ReasonScopeCoarse
			w.Message = fmt.Sprintf("the conditions of %d WorkloadSpreads exceed %d characters: webhooks %s are called for every pod of their namespaces",
				len(terms), MaxExpressionLength, strings.Join(t.Entries, " and "))
		}
		return w, nil
	}
}

// settle keeps the pending spreads the cache does not show, for PendingTTL.
func settle(p map[string]pendingEntry, cached map[string]bool, now time.Time) (map[string]pendingEntry, time.Duration) {
	return webhookscope.Settle(p, now, func(key string, e pendingEntry) time.Time {
		if cached[key] {
			return time.Time{}
		}
		return e.Since.Add(PendingTTL)
	})
}

// key is a spread's pending key.
func key(ws *appsv1alpha1.WorkloadSpread) string { return ws.Namespace + "/" + ws.Name }
