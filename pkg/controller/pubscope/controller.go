// Package pubscope keeps the PodUnavailableBudget pod webhooks' matchConditions in step with the
// budgets, so that the API server calls kruise only for pods some budget may cover: vpod.kb.io
// (pod DELETE and UPDATE; the condition is over the stored pod, oldObject) and
// vpodeviction.kb.io (pods/eviction CREATE; an eviction carries only the pod's name, so the
// condition is over the names of the pods each budget covers). Any other pod's delete, eviction
// or update never waits on kruise, even while it is down and failurePolicy is Fail.
//
// It writes the one condition ConditionName of those two entries and the annotation
// PendingAnnotation, and nothing else of the configuration, through pkg/controller/webhookscope
// (the loop the scope controllers share). The budget's validating webhook writes the same at
// admission (Includer), so that a budget covers its pods from the moment it is stored, before the
// leader's cache has it.
package pubscope

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	pubinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/policy/v1alpha1"
	publisters "github.com/nodekruise/kruise/pkg/client/listers/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "podunavailablebudget-scope"

const (
	// DefaultConfiguration names the validating configuration (the chart's); PodWebhook and
	// EvictionWebhook its two entries.
	DefaultConfiguration = "kruise-validating-webhook-configuration"
	PodWebhook           = "vpod.kb.io"
	EvictionWebhook      = "vpodeviction.kb.io"
	// ConditionName is the matchCondition this controller owns in both entries.
	ConditionName = "pub-covered"
	// ReasonScopeUpdated is the Normal Event on the configuration when the conditions changed;
	// ReasonScopeCoarse the Warning when they fell back to the budgets' namespaces.
	ReasonScopeUpdated = "PodUnavailableBudgetScopeUpdated"
	ReasonScopeCoarse  = "PodUnavailableBudgetScopeCoarse"
)

// key is the queue's only key: there is one scope to keep.
const key = "scope"

// podEventDelay gathers the pod events of a rollout into one write: a pod's name pattern
// usually is there already, and a new one (a bare pod, a new ReplicaSet) waits at most this.
const podEventDelay = time.Second

// Config is what the controller is built from.
type Config struct {
	Client  kubernetes.Interface
	Budgets pubinformers.PodUnavailableBudgetInformer
	Pods    coreinformers.PodInformer
	// Configuration defaults to DefaultConfiguration.
	Configuration string
	// Recorder records Events on the configuration; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock times the queue and the pending entries; nil is the real clock.
	Clock clock.WithTicker
}

// Controller writes the pod webhooks' matchConditions.
type Controller struct {
	budgets publisters.PodUnavailableBudgetLister
	pods    corelisters.PodLister
	scope   *webhookscope.Controller
}

// target is the condition of the two entries of configuration.
func target(configuration string) webhookscope.Target {
	if configuration == "" {
		configuration = DefaultConfiguration
	}
	return webhookscope.Target{Kind: webhookscope.Validating, Configuration: configuration,
		Entries: []string{PodWebhook, EvictionWebhook}, Condition: ConditionName, PendingAnnotation: PendingAnnotation}
}

// New builds the controller and registers its event handlers; it does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Budgets == nil || cfg.Pods == nil {
		return nil, errors.New("pubscope: Client, Budgets and Pods are required")
	}
	c := &Controller{budgets: cfg.Budgets.Lister(), pods: cfg.Pods.Lister()}
	scope, err := webhookscope.New(webhookscope.Config{Name: Name, Client: cfg.Client, Target: target(cfg.Configuration),
		Want: c.want, Recorder: cfg.Recorder, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	c.scope = scope
	if _, err := cfg.Budgets.Informer().AddEventHandler(scope.Handler()); err != nil {
		return nil, fmt.Errorf("adding PodUnavailableBudget event handler: %w", err)
	}
	later := func() { scope.EnqueueAfter(podEventDelay) }
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { later() },
		UpdateFunc: func(o, n any) {
			op, ok1 := o.(*corev1.Pod)
			np, ok2 := n.(*corev1.Pod)
			if !ok1 || !ok2 || !labels.Equals(op.Labels, np.Labels) || controllerName(op) != controllerName(np) {
				later()
			}
		},
		DeleteFunc: func(any) { later() },
	}); err != nil {
		return nil, fmt.Errorf("adding Pod event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run keeps the conditions until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error { return c.scope.Run(ctx, workers) }

// sync writes the conditions once (webhookscope.Controller.Sync with want).
func (c *Controller) sync(ctx context.Context, k string) (time.Duration, error) {
	return c.scope.Sync(ctx, k)
}

// want is the conditions of the budgets in the cache, with those admitted that the cache does not
// show yet (PendingAnnotation).
func (c *Controller) want(ctx context.Context, current webhookscope.State, now time.Time) (webhookscope.Want, error) {
	budgets, err := c.budgets.List(labels.Everything())
	if err != nil {
		return webhookscope.Want{}, fmt.Errorf("listing PodUnavailableBudgets: %w", err)
	}
	pending, err := webhookscope.ParsePending[pendingEntry](current.Pending)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Dropping the pending PodUnavailableBudgets of the webhook configuration")
	}
	cached := make(map[string]bool, len(budgets))
	var terms []Terms
	var namespaces []string
	podsOf := map[string][]PodName{}
	for _, b := range budgets {
		cached[b.Namespace+"/"+b.Name] = true
		namespaces = append(namespaces, b.Namespace)
		if b.Spec.TargetReference == nil {
			if _, read := podsOf[b.Namespace]; !read {
				if podsOf[b.Namespace], err = c.podNames(b.Namespace); err != nil {
					return webhookscope.Want{}, err
				}
			}
		}
		terms = append(terms, BudgetTerms(b, podsOf[b.Namespace]))
	}
	kept, next := pendingSet(pending).settle(cached, now)
	for name, p := range kept {
		terms = append(terms, p.Terms)
		namespaces = append(namespaces, webhookscope.NamespaceOf(name))
	}
	encoded, err := kept.encode()
	if err != nil {
		return webhookscope.Want{}, err
	}
	pod, eviction, coarse := Expressions(terms, namespaces)
	w := webhookscope.Want{
		Scope: webhookscope.Scope{PodWebhook: pod, EvictionWebhook: eviction}, Pending: encoded, Next: next,
		EventType: corev1.EventTypeNormal, Reason: ReasonScopeUpdated,
		Message: fmt.Sprintf("webhooks %s and %s are called for the pods %d PodUnavailableBudgets cover (matchCondition %s)",
			PodWebhook, EvictionWebhook, len(budgets)+len(kept), ConditionName),
		LogValues: []any{"budgets", len(budgets), "pending", len(kept), "podExpressionLength", len(pod), "evictionExpressionLength", len(eviction), "coarse", coarse},
	}
	if coarse {
		w.EventType, w.Reason = corev1.EventTypeWarning, ReasonScopeCoarse
		w.Message = fmt.Sprintf("the conditions of %d PodUnavailableBudgets exceed %d characters: webhooks %s and %s are called for every pod of their namespaces",
			len(budgets)+len(kept), MaxExpressionLength, PodWebhook, EvictionWebhook)
	}
	return w, nil
}

// podNames are the pods of namespace as their eviction patterns read them.
func (c *Controller) podNames(namespace string) ([]PodName, error) {
	pods, err := c.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", namespace, err)
	}
	out := make([]PodName, 0, len(pods))
	for _, p := range pods {
		out = append(out, NameOf(p))
	}
	return out, nil
}

// NameOf is what pod's eviction pattern is made of.
func NameOf(pod *corev1.Pod) PodName {
	return PodName{Namespace: pod.Namespace, Name: pod.Name, GenerateName: pod.GenerateName, Labels: pod.Labels, Owner: controllerName(pod)}
}

func controllerName(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Name
	}
	return ""
}

// scope is the two entries' conditions.
type scope struct{ pod, eviction string }

// currentExpressions are the entries' ConditionName expressions ("" where one has none), and
// whether both entries exist.
func currentExpressions(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) (scope, bool) {
	s, found := target(cfg.Name).Read(cfg)
	return scope{pod: s.Scope[PodWebhook], eviction: s.Scope[EvictionWebhook]}, found
}
