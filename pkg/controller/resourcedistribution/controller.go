package resourcedistribution

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics (the workqueue's, whose adds count the passes)
// and the queue.
const Name = "resourcedistribution"

// Parallel is how many writes of one pass are in flight at once: a 1,000-namespace distribution
// is paced by the client's rate limit, not by round trips one after another.
const Parallel = 16

// nameIndex indexes the labelled objects by their name (the resource's name, in every namespace).
const nameIndex = "name"

// Config is what the controller is built from. The copy caches are its own (doc.go).
type Config struct {
	ctrlbase.Config
	Distributions kruiseinformers.ResourceDistributionInformer
	Namespaces    coreinformers.NamespaceInformer
}

// Controller keeps the distributions' copies.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	rdLister     kruiselisters.ResourceDistributionLister
	nsLister     corelisters.NamespaceLister
	copies       map[string]cache.SharedIndexInformer // by kind
	apis         map[string]kindAPI
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]

	// adopted holds the distributions (by UID) whose pre-label copies were looked for.
	mu      sync.Mutex
	adopted map[types.UID]bool
	// unseen are the copies created that the caches have not shown yet (by kind/namespace/name;
	// any event of the object clears its entry): the pass that the creations' own events start
	// counts them as made instead of creating them again.
	unseen map[string]created
}

// created is a copy this controller created, and when.
type created struct {
	obj metav1.Object
	at  time.Time
}

// unseenFor is how long a created copy counts as made without the cache showing it: an event
// that came before the entry was written (a race) must not hide a copy deleted meanwhile forever.
const unseenFor = 30 * time.Second

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Distributions == nil || cfg.Namespaces == nil {
		return nil, errors.New("resourcedistribution: Client, KruiseClient, Distributions and Namespaces are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		rdLister:     cfg.Distributions.Lister(),
		nsLister:     cfg.Namespaces.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
		adopted:      map[types.UID]bool{},
		unseen:       map[string]created{},
		apis:         map[string]kindAPI{KindSecret: apiFor(cfg.Client, KindSecret), KindConfigMap: apiFor(cfg.Client, KindConfigMap)},
	}
	onlyCopies := func(o *metav1.ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{CopyLabel: "true"}).String()
	}
	indexers := cache.Indexers{nameIndex: func(obj any) ([]string, error) {
		if m, ok := obj.(metav1.Object); ok {
			return []string{m.GetName()}, nil
		}
		return nil, nil
	}}
	c.copies = map[string]cache.SharedIndexInformer{
		KindSecret:    coreinformers.NewFilteredSecretInformer(cfg.Client, metav1.NamespaceAll, 0, indexers, onlyCopies),
		KindConfigMap: coreinformers.NewFilteredConfigMapInformer(cfg.Client, metav1.NamespaceAll, 0, indexers, onlyCopies),
	}
	for kind, inf := range c.copies {
		if err := inf.SetTransform(dropManagedFields); err != nil {
			return nil, fmt.Errorf("setting the %s copy transform: %w", kind, err)
		}
		seen := func(obj any) { c.seen(kind, obj) }
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { seen(obj); c.enqueueOwner(obj) },
			UpdateFunc: func(old, cur any) { seen(cur); c.copyUpdated(old, cur) },
			DeleteFunc: func(obj any) { seen(obj); c.enqueueOwner(obj) },
		}); err != nil {
			return nil, fmt.Errorf("adding the %s copy event handler: %w", kind, err)
		}
	}
	if _, err := cfg.Distributions.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueDistribution,
		UpdateFunc: c.distributionUpdated,
		DeleteFunc: c.forgetDistribution,
	}); err != nil {
		return nil, fmt.Errorf("adding the ResourceDistribution event handler: %w", err)
	}
	if _, err := cfg.Namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.namespaceChanged(nil, obj) },
		UpdateFunc: c.namespaceChanged,
		DeleteFunc: func(obj any) { c.namespaceChanged(nil, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding the namespace event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run starts the copy caches, waits for them, and processes distributions with n workers until
// ctx ends.
func (c *Controller) Run(ctx context.Context, n int) error {
	synced := make([]cache.InformerSynced, 0, len(c.copies))
	for _, inf := range c.copies {
		go inf.RunWithContext(ctx)
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), synced...) {
		return fmt.Errorf("%s: the copy caches did not sync", Name)
	}
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "resourcedistribution"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}

// dropManagedFields keeps the copy caches lean; nothing here reads managed fields.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func unseenKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// seen clears a created copy's unseen entry: the cache now shows it (or its deletion).
func (c *Controller) seen(kind string, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, ok := obj.(metav1.Object); ok {
		c.mu.Lock()
		delete(c.unseen, unseenKey(kind, m.GetNamespace(), m.GetName()))
		c.mu.Unlock()
	}
}

// ownerOf is the name of the distribution controlling a copy, if any.
func ownerOf(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && isDistributionRef(ref) {
		return []string{ref.Name}, nil
	}
	return nil, nil
}

func (c *Controller) enqueueDistribution(obj any) {
	if rd, ok := obj.(*appsv1alpha1.ResourceDistribution); ok {
		c.queue.Add(rd.Name)
	}
}

// forgetDistribution drops what the controller remembers of a deleted distribution; its copies
// go with it (the garbage collector, through their owner reference).
func (c *Controller) forgetDistribution(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if rd, ok := obj.(*appsv1alpha1.ResourceDistribution); ok {
		c.mu.Lock()
		delete(c.adopted, rd.UID)
		c.mu.Unlock()
	}
}

// distributionUpdated queues a distribution whose spec changed (its generation); its own status
// writes cost nothing.
func (c *Controller) distributionUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1alpha1.ResourceDistribution)
	cur, ok2 := newObj.(*appsv1alpha1.ResourceDistribution)
	if !ok1 || !ok2 || (old.Generation == cur.Generation && old.UID == cur.UID) {
		return
	}
	c.queue.Add(cur.Name)
}

// enqueueOwner queues the distribution controlling a copy (adds, deletes, tombstones).
func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	names, _ := ownerOf(obj)
	for _, n := range names {
		c.queue.Add(n)
	}
}

// copyUpdated queues the owner when a copy really changed (not a resync).
func (c *Controller) copyUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(metav1.Object)
	cur, ok2 := newObj.(metav1.Object)
	if !ok1 || !ok2 || old.GetResourceVersion() == cur.GetResourceVersion() {
		return
	}
	c.enqueueOwner(oldObj)
	c.enqueueOwner(newObj)
}

// namespaceChanged queues the distributions whose targets the namespace entered or left, or
// that target it when it appears, goes or starts terminating. Other updates cost nothing.
func (c *Controller) namespaceChanged(oldObj, newObj any) {
	if tomb, ok := newObj.(cache.DeletedFinalStateUnknown); ok {
		newObj = tomb.Obj
	}
	cur, ok := newObj.(*corev1.Namespace)
	if !ok {
		return
	}
	old, _ := oldObj.(*corev1.Namespace)
	if old != nil && maps.Equal(old.Labels, cur.Labels) && (old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) {
		return
	}
	rds, err := c.rdLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, rd := range rds {
		t := &rd.Spec.Targets
		sel := Selector(t)
		now := Matches(t, sel, cur.Name, cur.Labels)
		if old == nil || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) {
			if now {
				c.queue.Add(rd.Name)
			}
			continue
		}
		if now != Matches(t, sel, old.Name, old.Labels) {
			c.queue.Add(rd.Name)
		}
	}
}

// sync is one pass over a distribution: read, Decide, write, status.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("resourcedistribution", name)
	rd, err := c.rdLister.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil // its copies go with it (the garbage collector, through their owner reference)
	}
	if err != nil {
		return 0, err
	}
	if rd.DeletionTimestamp != nil {
		return 0, nil
	}
	src, err := ParseSource(rd.Spec.Resource.Raw)
	if err != nil {
		// The webhook refuses such a resource; nothing to retry until the spec changes.
		logger.Error(err, "Cannot distribute the resource")
		return 0, nil
	}
	namespaces, err := c.nsLister.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	copies, err := c.knownCopies(ctx, rd, src)
	if err != nil {
		return 0, err
	}
	plan := Decide(rd, src, namespaces, copies)
	actions, pending := plan.Actions, map[string]bool{}
	if len(actions) > workers.Burst {
		for _, a := range actions[workers.Burst:] {
			pending[a.Namespace] = true
		}
		actions = actions[:workers.Burst]
	}
	failures := c.carryOut(ctx, rd, src, actions)
	maps.Copy(failures, plan.Failures)
	st := Status(&rd.Status, rd.Generation, plan.Targets, failures, pending, metav1.NewTime(c.clock.Now()))
	if statusChanged(&rd.Status, &st) {
		cp := rd.DeepCopy()
		cp.Status = st
		if _, err := c.kruiseClient.AppsV1alpha1().ResourceDistributions().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("writing the status of ResourceDistribution %s: %w", name, err)
		}
	}
	if err := retryable(failures); err != nil {
		return 0, err
	}
	if len(pending) > 0 {
		return time.Millisecond, nil // the rest in the next pass
	}
	if st.Conditions[4].Status == appsv1alpha1.ResourceDistributionConditionTrue {
		// An object in conflict is not in the copy caches (it is not ours), so its deletion
		// sends no event: look again now and then while some namespace is in conflict.
		return ConflictRecheck, nil
	}
	return 0, nil
}

// ConflictRecheck is how often a distribution with a namespace in conflict is looked at again.
const ConflictRecheck = time.Minute

// retryable is an error when a write or read failed (conflicts and missing namespaces wait for
// an event instead, as OpenKruise).
func retryable(failures map[string]Failure) error {
	for _, ns := range sortedKeys(failures) {
		switch f := failures[ns]; f.Condition {
		case appsv1alpha1.ResourceDistributionConflictOccurred, appsv1alpha1.ResourceDistributionNamespaceNotExists:
		default:
			return fmt.Errorf("%s in namespace %s: %s", f.Condition, ns, f.Message)
		}
	}
	return nil
}

// knownCopies are the objects of the resource's kind and name the distribution controls or that
// carry the label, by namespace; the first pass over a distribution adds the unlabelled ones it
// controls (made by OpenKruise), which their update then labels.
func (c *Controller) knownCopies(ctx context.Context, rd *appsv1alpha1.ResourceDistribution, src *Source) (map[string]metav1.Object, error) {
	// Every labelled object of the name: the distribution's copies, and objects another
	// distribution (or no one) controls, which are conflicts to report, not creates to attempt.
	objs, err := c.copies[src.Kind].GetIndexer().ByIndex(nameIndex, src.Name)
	if err != nil {
		return nil, err
	}
	out := make(map[string]metav1.Object, len(objs))
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok {
			out[m.GetNamespace()] = m
		}
	}
	c.mu.Lock()
	done := c.adopted[rd.UID]
	now := c.clock.Now()
	for key, e := range c.unseen {
		if now.Sub(e.at) > unseenFor {
			delete(c.unseen, key)
			continue
		}
		ns := e.obj.GetNamespace()
		if _, cached := out[ns]; !cached && key == unseenKey(src.Kind, ns, src.Name) {
			out[ns] = e.obj
		}
	}
	c.mu.Unlock()
	if done {
		return out, nil
	}
	named, err := c.apis[src.Kind].listNamed(ctx, src.Name)
	if err != nil {
		return nil, fmt.Errorf("listing the %ss named %s to adopt: %w", src.Kind, src.Name, err)
	}
	for _, m := range named {
		if _, seen := out[m.GetNamespace()]; !seen && m.GetName() == src.Name && controlledBy(m, rd) {
			out[m.GetNamespace()] = m
		}
	}
	c.mu.Lock()
	c.adopted[rd.UID] = true
	c.mu.Unlock()
	return out, nil
}

// carryOut makes the writes, Parallel at a time, and returns the namespaces that failed.
func (c *Controller) carryOut(ctx context.Context, rd *appsv1alpha1.ResourceDistribution, src *Source, actions []Action) map[string]Failure {
	api := c.apis[src.Kind]
	failures := map[string]Failure{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, Parallel)
	for _, a := range actions {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if f := c.act(ctx, api, rd, src, a); f != nil {
				mu.Lock()
				failures[a.Namespace] = *f
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failures
}

// act makes one write. A create that finds the name taken reads the object and decides again:
// someone else's is a conflict, left alone; the distribution's own (the cache had not shown it,
// or OpenKruise made it) is brought up to date.
func (c *Controller) act(ctx context.Context, api kindAPI, rd *appsv1alpha1.ResourceDistribution, src *Source, a Action) *Failure {
	logger := klog.FromContext(ctx).WithValues("resourcedistribution", rd.Name, "namespace", a.Namespace, "kind", src.Kind, "name", src.Name)
	switch a.Op {
	case OpCreate:
		made, err := api.create(ctx, a.Object)
		if err == nil {
			c.mu.Lock()
			c.unseen[unseenKey(src.Kind, a.Namespace, src.Name)] = created{obj: made, at: c.clock.Now()}
			c.mu.Unlock()
			logger.V(2).Info("Created copy")
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return &Failure{appsv1alpha1.ResourceDistributionCreateResourceFailed, err.Error()}
		}
		existing, err := api.get(ctx, a.Namespace, src.Name)
		if err != nil {
			return &Failure{appsv1alpha1.ResourceDistributionGetResourceFailed, err.Error()}
		}
		next, f := decideOne(rd, src, a.Namespace, existing)
		if f != nil {
			logger.V(2).Info("Object of the same name is not this distribution's; leaving it alone")
			return f
		}
		if next == nil {
			return nil
		}
		a = *next
		fallthrough
	case OpUpdate:
		if err := api.update(ctx, a.Object); err != nil {
			return &Failure{appsv1alpha1.ResourceDistributionUpdateResourceFailed, err.Error()}
		}
		logger.V(2).Info("Updated copy")
	case OpDelete:
		err := api.delete(ctx, a.Namespace, src.Name, a.Object.GetUID())
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return &Failure{appsv1alpha1.ResourceDistributionDeleteResourceFailed, err.Error()}
		}
		logger.V(2).Info("Deleted copy of a namespace that left the targets")
	}
	return nil
}
