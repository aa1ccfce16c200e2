// Package pubscope keeps the PodUnavailableBudget pod webhooks' matchConditions in step with the
// budgets, so that the API server calls kruise only for pods some budget may cover: vpod.kb.io
// (pod DELETE and UPDATE; the condition is over the stored pod, oldObject) and
// vpodeviction.kb.io (pods/eviction CREATE; an eviction carries only the pod's name, so the
// condition is over the names of the pods each budget covers). Any other pod's delete, eviction
// or update never waits on kruise, even while it is down and failurePolicy is Fail.
//
// It writes the one condition ConditionName of those two entries and the annotation
// PendingAnnotation, and nothing else of the configuration. The budget's validating webhook
// writes the same at admission (Includer), so that a budget covers its pods from the moment it
// is stored, before the leader's cache has it.
package pubscope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	pubinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/policy/v1alpha1"
	publisters "github.com/nodekruise/kruise/pkg/client/listers/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/workers"
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
	client         kubernetes.Interface
	budgets        publisters.PodUnavailableBudgetLister
	pods           corelisters.PodLister
	configs        admissionlisters.ValidatingWebhookConfigurationLister
	configuration  string
	recorder       record.EventRecorder
	clock          clock.PassiveClock
	queue          workqueue.TypedRateLimitingInterface[string]
	configInformer cache.SharedIndexInformer
}

// New builds the controller and registers its event handlers; it does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Budgets == nil || cfg.Pods == nil {
		return nil, errors.New("pubscope: Client, Budgets and Pods are required")
	}
	if cfg.Configuration == "" {
		cfg.Configuration = DefaultConfiguration
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, cfg.Configuration).String()
	configInformer := admissioninformers.NewFilteredValidatingWebhookConfigurationInformer(cfg.Client, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = byName })
	c := &Controller{
		client: cfg.Client, budgets: cfg.Budgets.Lister(), pods: cfg.Pods.Lister(),
		configs:       admissionlisters.NewValidatingWebhookConfigurationLister(configInformer.GetIndexer()),
		configuration: cfg.Configuration, recorder: cfg.Recorder,
		clock: clk, queue: workers.NewQueue(Name, clk), configInformer: configInformer,
	}
	now := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(key) },
		UpdateFunc: func(any, any) { c.queue.Add(key) },
		DeleteFunc: func(any) { c.queue.Add(key) },
	}
	if _, err := cfg.Budgets.Informer().AddEventHandler(now); err != nil {
		return nil, fmt.Errorf("adding PodUnavailableBudget event handler: %w", err)
	}
	later := func() { c.queue.AddAfter(key, podEventDelay) }
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
	// The configuration is watched too: a Helm upgrade puts the chart's "false" back, and this
	// puts the budgets' conditions back again.
	if _, err := configInformer.AddEventHandler(now); err != nil {
		return nil, fmt.Errorf("adding ValidatingWebhookConfiguration event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run keeps the conditions with one worker (there is one key) until ctx ends.
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

// sync writes the conditions of the budgets in the cache, with those admitted that the cache does
// not show yet (PendingAnnotation), when the entries' differ. The write is conditional on the
// configuration's resourceVersion: a budget admitted meanwhile (Include) is never written over.
func (c *Controller) sync(ctx context.Context, _ string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("configuration", c.configuration)
	budgets, err := c.budgets.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing PodUnavailableBudgets: %w", err)
	}
	cfg, err := c.configs.Get(c.configuration)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("No validating webhook configuration; nothing to scope")
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", c.configuration, err)
	}
	current, found := currentExpressions(cfg)
	if !found {
		logger.V(2).Info("The webhook configuration has no PodUnavailableBudget pod entries; nothing to scope")
		return 0, nil
	}
	pending, err := parsePending(cfg.Annotations)
	if err != nil {
		logger.Error(err, "Dropping the pending PodUnavailableBudgets of the webhook configuration")
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
					return 0, err
				}
			}
		}
		terms = append(terms, BudgetTerms(b, podsOf[b.Namespace]))
	}
	kept, next := pending.settle(cached, c.clock.Now())
	for name, p := range kept {
		terms = append(terms, p.Terms)
		namespaces = append(namespaces, namespaceOf(name))
	}
	pod, eviction, coarse := Expressions(terms, namespaces)
	want := scope{pod: pod, eviction: eviction}
	if current == want && len(kept) == len(pending) {
		return next, nil
	}
	_, err = writeScope(ctx, c.client, c.configuration, want, kept, cfg.ResourceVersion)
	if apierrors.IsConflict(err) {
		logger.V(4).Info("The webhook configuration changed meanwhile; syncing again")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if current != want {
		logger.Info("Updated the pods the PodUnavailableBudget webhooks are called for", "budgets", len(budgets), "pending", len(kept),
			"podExpressionLength", len(pod), "evictionExpressionLength", len(eviction), "coarse", coarse)
		if coarse {
			c.recorder.Eventf(cfg, corev1.EventTypeWarning, ReasonScopeCoarse,
				"the conditions of %d PodUnavailableBudgets exceed %d characters: webhooks %s and %s are called for every pod of their namespaces",
				len(budgets)+len(kept), MaxExpressionLength, PodWebhook, EvictionWebhook)
		} else {
			c.recorder.Eventf(cfg, corev1.EventTypeNormal, ReasonScopeUpdated,
				"webhooks %s and %s are called for the pods %d PodUnavailableBudgets cover (matchCondition %s)", PodWebhook, EvictionWebhook, len(budgets)+len(kept), ConditionName)
		}
	}
	return next, nil
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
	var s scope
	found := 0
	for _, w := range cfg.Webhooks {
		var into *string
		switch w.Name {
		case PodWebhook:
			into = &s.pod
		case EvictionWebhook:
			into = &s.eviction
		default:
			continue
		}
		found++
		for _, mc := range w.MatchConditions {
			if mc.Name == ConditionName {
				*into = mc.Expression
			}
		}
	}
	return s, found == 2
}

// writeScope sets the two conditions and PendingAnnotation with a strategic merge patch: webhooks
// merge by name and their matchConditions by name, so the other conditions, entries and the
// caBundles are left as they are. resourceVersion, when set, makes the write conditional.
func writeScope(ctx context.Context, client kubernetes.Interface, configuration string, s scope, pending pendingSet, resourceVersion string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	type condition struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	}
	type entry struct {
		Name            string      `json:"name"`
		MatchConditions []condition `json:"matchConditions"`
	}
	value, err := pending.encode()
	if err != nil {
		return nil, err
	}
	var annotation any // null removes it
	if value != "" {
		annotation = value
	}
	meta := map[string]any{"annotations": map[string]any{PendingAnnotation: annotation}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": meta,
		"webhooks": []entry{
			{Name: PodWebhook, MatchConditions: []condition{{Name: ConditionName, Expression: s.pod}}},
			{Name: EvictionWebhook, MatchConditions: []condition{{Name: ConditionName, Expression: s.eviction}}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the matchConditions patch: %w", err)
	}
	out, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, configuration, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patching the PodUnavailableBudget webhooks of ValidatingWebhookConfiguration %s: %w", configuration, err)
	}
	return out, nil
}
