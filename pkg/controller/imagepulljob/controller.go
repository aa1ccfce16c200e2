// Package imagepulljob runs v1beta1 ImagePullJobs: it writes each job's
// request for its image into the NodeImages of the selected nodes (a few at
// a time, per spec.parallelism), reads the node daemons' results back from
// the NodeImages' status, rolls them up into the job's status, and withdraws
// the request when the job finishes or goes away.
//
// Two queues split the work. The job queue (key "namespace/name") decides,
// per job, which nodes should carry its request (its plan) and writes the
// job's status. The node queue (key: NodeImage name) makes one NodeImage's
// spec agree with the plans of every job that targets it, in one write, and
// drops owner references of jobs that no longer exist. Plans live in memory
// only; everything in them is recomputed from the API objects after a
// restart, so no finalizer is needed and uninstalling kruise cannot leave
// jobs stuck.
//
// Work is proportional to change: a NodeImage status update enqueues only
// the jobs owning the tags whose status changed; a NodeImage spec change
// only the jobs it leaves without a status update to come (specWakes); a
// NodeImage label change only the jobs with a label selector whose match
// changed; a pod event only the podSelector jobs of its namespace that match
// it. Nothing is resynced periodically; time-based steps (deadline, ttl,
// re-pull) are timers that a job's next sync replaces or cancels
// (recheck.go), so a finished job is not looked at again.
//
// Pull results are dated on the controller's clock, never the nodes'
// (results.go). A NodeImage, shared by every job on its node, is kept
// within a size budget and the schema's bounds: a request that does not fit
// is left out and its job counts the node as failed (budget.go). Why a job
// failed on a node is kept on the job (failures.go).
package imagepulljob

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/events"
	"github.com/nodekruise/kruise/pkg/workers"
)

// Name is the controller's name in logs, metrics and the job queue; the node
// queue is Name + "-nodeimage".
const Name = "imagepulljob"

// Defaults of the Config periods.
const (
	// DefaultRepullPeriod: a Never job pulls its image again on a node whose
	// last successful pull is this old (OpenKruise re-pulls about daily), so
	// an image removed by the kubelet's image GC comes back.
	DefaultRepullPeriod = 24 * time.Hour
	// DefaultRetryFailedPeriod: a Never job retries a node whose pull failed
	// this long ago.
	DefaultRetryFailedPeriod = 30 * time.Minute
)

// Index names (prefixed: the informers are shared with other controllers).
const (
	// indexJobSelector maps unfinished jobs to how they pick nodes:
	// selectorAll, selectorNames, selectorLabels or podSelectorPrefix+namespace.
	indexJobSelector = "imagepulljob.apps.kruise.io/selector"
	// indexOwnerUID maps NodeImages to the UIDs of the ImagePullJobs owning
	// any of their tags.
	indexOwnerUID = "imagepulljob.apps.kruise.io/owner-uid"

	selectorAll       = "all"
	selectorNames     = "names"
	selectorLabels    = "labels"
	podSelectorPrefix = "pods/"
)

// Config is what the controller is built from.
type Config struct {
	Client       kubernetes.Interface
	KruiseClient versioned.Interface
	Jobs         kruiseinformers.ImagePullJobInformer
	NodeImages   kruiseinformers.NodeImageInformer
	Pods         coreinformers.PodInformer
	// Secrets sees the secrets jobs name as pull secrets (their namespaces).
	Secrets coreinformers.SecretInformer
	// Recorder records Events on jobs; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock reads the time; nil is the real clock.
	Clock clock.WithTicker
	// RepullPeriod defaults to DefaultRepullPeriod.
	RepullPeriod time.Duration
	// RetryFailedPeriod defaults to DefaultRetryFailedPeriod.
	RetryFailedPeriod time.Duration
	// NodeImageSpecBudget is the most bytes of a NodeImage's spec;
	// defaults to DefaultNodeImageSpecBudget (budget.go).
	NodeImageSpecBudget int
}

// Controller runs ImagePullJobs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	jobLister    kruiselisters.ImagePullJobLister
	jobIndexer   cache.Indexer
	niLister     kruiselisters.NodeImageLister
	niIndexer    cache.Indexer
	podLister    corelisters.PodLister
	secretLister corelisters.SecretLister
	recorder     record.EventRecorder
	clock        clock.WithTicker
	repull       time.Duration
	retryFailed  time.Duration
	specBudget   int

	jobQueue  workqueue.TypedRateLimitingInterface[string]
	nodeQueue workqueue.TypedRateLimitingInterface[string]
	// rechecks are the jobs' pending timed looks.
	rechecks *rechecks
	// results dates the pull results on the controller's clock.
	results *resultTimes

	// plans holds the latest plan of each job.
	plans *planStore

	// refusals holds, per node, the jobs whose request the last node sync
	// left out for lack of room, and why (budget.go).
	refusals *refusals
}

// New builds the controller and registers its event handlers and indexes. It
// does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Jobs == nil || cfg.NodeImages == nil || cfg.Pods == nil || cfg.Secrets == nil {
		return nil, errors.New("imagepulljob: Client, KruiseClient, Jobs, NodeImages, Pods and Secrets are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		jobLister:    cfg.Jobs.Lister(),
		jobIndexer:   cfg.Jobs.Informer().GetIndexer(),
		niLister:     cfg.NodeImages.Lister(),
		niIndexer:    cfg.NodeImages.Informer().GetIndexer(),
		podLister:    cfg.Pods.Lister(),
		secretLister: cfg.Secrets.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		repull:       cfg.RepullPeriod,
		retryFailed:  cfg.RetryFailedPeriod,
		specBudget:   cfg.NodeImageSpecBudget,
		jobQueue:     workers.NewQueue(Name, clk),
		nodeQueue:    workers.NewQueue(Name+"-nodeimage", clk),
		plans:        newPlanStore(),
		refusals:     newRefusals(),
	}
	c.rechecks = newRechecks(clk, c.jobQueue.Add)
	c.results = newResultTimes()
	if c.repull <= 0 {
		c.repull = DefaultRepullPeriod
	}
	if c.retryFailed <= 0 {
		c.retryFailed = DefaultRetryFailedPeriod
	}
	if c.specBudget <= 0 {
		c.specBudget = DefaultNodeImageSpecBudget
	}
	if err := addIndexer(cfg.Jobs.Informer(), indexJobSelector, jobSelectorIndex); err != nil {
		return nil, err
	}
	if err := addIndexer(cfg.NodeImages.Informer(), indexOwnerUID, ownerUIDIndex); err != nil {
		return nil, err
	}
	if err := addIndexer(cfg.Jobs.Informer(), indexPullSecret, pullSecretIndex); err != nil {
		return nil, err
	}
	if _, err := cfg.Jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobAdded,
		UpdateFunc: c.jobUpdated,
		DeleteFunc: c.jobDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding ImagePullJob event handler: %w", err)
	}
	if _, err := cfg.NodeImages.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.nodeImageAdded,
		UpdateFunc: c.nodeImageUpdated,
		DeleteFunc: c.nodeImageDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding NodeImage event handler: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) { c.podChanged(nil, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	if _, err := cfg.Secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.secretChanged(nil, obj) },
		UpdateFunc: c.secretChanged,
		DeleteFunc: func(obj any) { c.secretChanged(nil, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding secret event handler: %w", err)
	}
	return c, nil
}

// addIndexer adds an index unless one of that name is there already.
func addIndexer(inf cache.SharedIndexInformer, name string, fn cache.IndexFunc) error {
	if _, ok := inf.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{name: fn}); err != nil {
		return fmt.Errorf("adding index %s: %w", name, err)
	}
	return nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes jobs and NodeImages with n workers each until ctx ends.
// Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	defer c.jobQueue.ShutDown()
	defer c.nodeQueue.ShutDown()
	defer c.rechecks.stopAll()
	stopRecorder, err := events.Ensure(ctx, c.client, &c.recorder)
	if err != nil {
		return err
	}
	defer stopRecorder()
	klog.FromContext(ctx).Info("Started workers", "workers", n)
	var wg sync.WaitGroup
	wg.Go(func() { c.jobLoop().Run(ctx, n) })
	wg.Go(func() { c.nodeLoop().Run(ctx, n) })
	wg.Wait()
	return nil
}

func (c *Controller) jobLoop() workers.Loop {
	return workers.Loop{Queue: c.jobQueue, Sync: c.syncJobTimed, KeyName: "imagePullJob"}
}

func (c *Controller) nodeLoop() workers.Loop {
	return workers.Loop{Queue: c.nodeQueue, Sync: c.syncNodeImage, KeyName: "nodeImage"}
}

// ---- indexes ----

func jobSelectorIndex(obj any) ([]string, error) {
	job, ok := obj.(*v1beta1.ImagePullJob)
	if !ok || job.Status.CompletionTime != nil {
		return nil, nil
	}
	return []string{selectorKind(job)}, nil
}

// selectorKind is how the job picks its nodes (an indexJobSelector value).
func selectorKind(job *v1beta1.ImagePullJob) string {
	s := job.Spec.Selector
	switch {
	case s != nil && len(s.Names) > 0:
		return selectorNames
	case s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0):
		return selectorLabels
	case s == nil && job.Spec.PodSelector != nil:
		return podSelectorPrefix + job.Namespace
	}
	return selectorAll
}

func ownerUIDIndex(obj any) ([]string, error) {
	ni, ok := obj.(*v1beta1.NodeImage)
	if !ok {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			for _, ref := range t.OwnerReferences {
				if isJobRef(ref) && !seen[string(ref.UID)] {
					seen[string(ref.UID)] = true
					out = append(out, string(ref.UID))
				}
			}
		}
	}
	return out, nil
}

// isJobRef reports whether an owner reference names an ImagePullJob (of any
// apps.kruise.io version: OpenKruise wrote v1alpha1).
func isJobRef(ref corev1.ObjectReference) bool {
	return ref.Kind == "ImagePullJob" && (ref.APIVersion == v1beta1.SchemeGroupVersion.String() || ref.APIVersion == "apps.kruise.io/v1alpha1")
}

// nodesOwnedBy lists the NodeImages with a tag owned by the job UID.
func (c *Controller) nodesOwnedBy(uid string) []string {
	objs, err := c.niIndexer.ByIndex(indexOwnerUID, uid)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		if ni, ok := o.(*v1beta1.NodeImage); ok {
			out = append(out, ni.Name)
		}
	}
	return out
}

// jobsByKind lists the unfinished jobs with a selector kind.
func (c *Controller) jobsByKind(kind string) []*v1beta1.ImagePullJob {
	objs, err := c.jobIndexer.ByIndex(indexJobSelector, kind)
	if err != nil {
		return nil
	}
	out := make([]*v1beta1.ImagePullJob, 0, len(objs))
	for _, o := range objs {
		if j, ok := o.(*v1beta1.ImagePullJob); ok {
			out = append(out, j)
		}
	}
	return out
}

// ---- event handlers ----

func (c *Controller) enqueueJob(job *v1beta1.ImagePullJob) {
	c.jobQueue.Add(job.Namespace + "/" + job.Name)
}

func (c *Controller) jobAdded(obj any) {
	if job, ok := obj.(*v1beta1.ImagePullJob); ok {
		c.enqueueJob(job)
	}
}

// jobUpdated ignores updates that only change status (our own writes, mostly).
func (c *Controller) jobUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*v1beta1.ImagePullJob)
	cur, ok2 := newObj.(*v1beta1.ImagePullJob)
	if !ok1 || !ok2 {
		return
	}
	if old.Generation == cur.Generation && old.UID == cur.UID &&
		(old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) &&
		len(old.Finalizers) == len(cur.Finalizers) &&
		(old.Status.CompletionTime == nil) == (cur.Status.CompletionTime == nil) {
		return
	}
	c.enqueueJob(cur)
}

func (c *Controller) jobDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if job, ok := obj.(*v1beta1.ImagePullJob); ok {
		c.enqueueJob(job)
	}
}

func (c *Controller) nodeImageAdded(obj any) {
	ni, ok := obj.(*v1beta1.NodeImage)
	if !ok {
		return
	}
	c.results.observe(nil, ni, c.clock.Now())
	c.nodeQueue.Add(ni.Name)
	c.enqueueJobsTargeting(ni, nil)
}

func (c *Controller) nodeImageDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ni, ok := obj.(*v1beta1.NodeImage)
	if !ok {
		return
	}
	c.results.forget(ni.Name)
	c.enqueueJobsTargeting(ni, nil)
	for key := range ownerKeys(ni, nil) {
		c.jobQueue.Add(key)
	}
}

// enqueueJobsTargeting queues the unfinished jobs whose target set gains or
// loses ni when it appears or goes (old nil), or whose label selector match
// changes between old and ni.
func (c *Controller) enqueueJobsTargeting(ni, old *v1beta1.NodeImage) {
	if old == nil {
		for _, j := range c.jobsByKind(selectorAll) {
			c.enqueueJob(j)
		}
		for _, j := range c.jobsByKind(selectorNames) {
			for _, n := range j.Spec.Selector.Names {
				if n == ni.Name {
					c.enqueueJob(j)
					break
				}
			}
		}
	}
	for _, j := range c.jobsByKind(selectorLabels) {
		sel, err := nodeSelector(j)
		if err != nil {
			continue
		}
		now := sel.Matches(labels.Set(ni.Labels))
		if old == nil || now != sel.Matches(labels.Set(old.Labels)) {
			if now || old != nil {
				c.enqueueJob(j)
			}
		}
	}
	if old == nil {
		// The nodes of podSelector jobs are the nodes of pods that have a
		// NodeImage: a NodeImage appearing or going may change them. Only
		// jobs with a pod on this node are affected.
		c.enqueuePodJobsOnNode(ni.Name)
	}
}

// enqueuePodJobsOnNode queues the podSelector jobs matching a pod on node.
func (c *Controller) enqueuePodJobsOnNode(node string) {
	for _, kindKey := range c.jobIndexer.ListIndexFuncValues(indexJobSelector) {
		if len(kindKey) <= len(podSelectorPrefix) || kindKey[:len(podSelectorPrefix)] != podSelectorPrefix {
			continue
		}
		for _, j := range c.jobsByKind(kindKey) {
			sel, err := podSelector(j)
			if err != nil {
				continue
			}
			pods, err := c.podLister.Pods(j.Namespace).List(sel)
			if err != nil {
				continue
			}
			for _, p := range pods {
				if p.Spec.NodeName == node {
					c.enqueueJob(j)
					break
				}
			}
		}
	}
}

// nodeImageUpdated queues the node for its spec (only when the spec
// changed), the owners of tags whose status changed, the jobs a spec change
// leaves waiting (specWakes), and label-selector jobs whose match changed.
func (c *Controller) nodeImageUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*v1beta1.NodeImage)
	cur, ok2 := newObj.(*v1beta1.NodeImage)
	if !ok1 || !ok2 {
		return
	}
	if old.Generation != cur.Generation || old.UID != cur.UID {
		c.nodeQueue.Add(cur.Name)
	}
	changed := changedTags(old, cur)
	if len(changed) > 0 {
		// Before the jobs are queued: their syncs read the dates.
		c.results.observe(old, cur, c.clock.Now())
		for key := range ownerKeys(cur, changed) {
			c.jobQueue.Add(key)
		}
		for key := range ownerKeys(old, changed) {
			c.jobQueue.Add(key)
		}
	}
	for key := range specWakes(old, cur) {
		c.jobQueue.Add(key)
	}
	if !labels.Equals(old.Labels, cur.Labels) {
		c.enqueueJobsTargeting(cur, old)
	}
}

// tagKey names a tag of an image: repo + "\x00" + tag.
func tagKey(repo, tag string) string { return repo + "\x00" + tag }

// changedTags lists the tags whose status entries differ between old and cur.
func changedTags(old, cur *v1beta1.NodeImage) map[string]bool {
	out := map[string]bool{}
	index := func(ni *v1beta1.NodeImage) map[string][]v1beta1.ImageTagStatus {
		m := map[string][]v1beta1.ImageTagStatus{}
		for repo, st := range ni.Status.ImageStatuses {
			for _, t := range st.Tags {
				k := tagKey(repo, t.Tag)
				m[k] = append(m[k], t)
			}
		}
		return m
	}
	o, n := index(old), index(cur)
	for k, v := range n {
		if !tagStatusesEqual(o[k], v) {
			out[k] = true
		}
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			out[k] = true
		}
	}
	return out
}

// specWakes lists the jobs that a spec change leaves waiting for a status
// update that will not come: a job whose owner reference was added to a tag
// version that already has a result. The job planned the node while the
// pull was under way; the result's status update queued the owners of that
// time only, and this write changes no status. Without this the job stayed
// "pulling" for ever. (Joining a failed version bumps it, see
// syncNodeImage; the new version's status update queues its owners.)
func specWakes(old, cur *v1beta1.NodeImage) map[string]bool {
	out := map[string]bool{}
	for repo, img := range cur.Spec.Images {
		for i := range img.Tags {
			t := &img.Tags[i]
			st := findStatus(cur, repo, t.Tag, t.Version)
			if st == nil || (st.Phase != v1beta1.ImagePhaseSucceeded && st.Phase != v1beta1.ImagePhaseFailed) {
				continue
			}
			before := old.TagSpec(repo, t.Tag)
			for _, ref := range t.OwnerReferences {
				if !isJobRef(ref) {
					continue
				}
				if before == nil || before.Version != t.Version || !hasOwner(before, ref.UID) {
					out[ref.Namespace+"/"+ref.Name] = true
				}
			}
		}
	}
	return out
}

func tagStatusesEqual(a, b []v1beta1.ImageTagStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Phase != y.Phase || x.Version != y.Version || x.Message != y.Message ||
			!x.CompletionTime.Equal(y.CompletionTime) || !x.StartTime.Equal(y.StartTime) {
			return false
		}
	}
	return true
}

// ownerKeys lists the keys of the jobs owning the tags of ni in only (all
// tags when only is nil).
func ownerKeys(ni *v1beta1.NodeImage, only map[string]bool) map[string]bool {
	out := map[string]bool{}
	for repo, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			if only != nil && !only[tagKey(repo, t.Tag)] {
				continue
			}
			for _, ref := range t.OwnerReferences {
				if isJobRef(ref) {
					out[ref.Namespace+"/"+ref.Name] = true
				}
			}
		}
	}
	return out
}

// podChanged queues podSelector jobs of the pod's namespace that match the
// pod, when its node or labels changed (or it appeared or went).
func (c *Controller) podChanged(oldObj, newObj any) {
	if tomb, ok := newObj.(cache.DeletedFinalStateUnknown); ok {
		newObj = tomb.Obj
	}
	cur, ok := newObj.(*corev1.Pod)
	if !ok {
		return
	}
	old, _ := oldObj.(*corev1.Pod)
	if old != nil && old.Spec.NodeName == cur.Spec.NodeName && labels.Equals(old.Labels, cur.Labels) &&
		podTerminal(old) == podTerminal(cur) {
		return
	}
	if cur.Spec.NodeName == "" && (old == nil || old.Spec.NodeName == "") {
		return
	}
	for _, j := range c.jobsByKind(podSelectorPrefix + cur.Namespace) {
		sel, err := podSelector(j)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(cur.Labels)) || (old != nil && sel.Matches(labels.Set(old.Labels))) {
			c.enqueueJob(j)
		}
	}
}
