package imagepulljob

import (
	"bytes"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The informers' event handlers queue only what a change concerns (see the
// package documentation); what changed between two NodeImages is worked out
// in changes.go.

// addHandlers registers the controller's event handlers with the informers
// of cfg.
func (c *Controller) addHandlers(cfg Config) error {
	if _, err := cfg.Jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobAdded,
		UpdateFunc: c.jobUpdated,
		DeleteFunc: c.jobDeleted,
	}); err != nil {
		return fmt.Errorf("adding ImagePullJob event handler: %w", err)
	}
	if _, err := cfg.NodeImages.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.nodeImageAdded,
		UpdateFunc: c.nodeImageUpdated,
		DeleteFunc: c.nodeImageDeleted,
	}); err != nil {
		return fmt.Errorf("adding NodeImage event handler: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) { c.podChanged(nil, obj) },
	}); err != nil {
		return fmt.Errorf("adding pod event handler: %w", err)
	}
	if _, err := cfg.Secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.secretChanged(nil, obj) },
		UpdateFunc: c.secretChanged,
		DeleteFunc: func(obj any) { c.secretChanged(nil, obj) },
	}); err != nil {
		return fmt.Errorf("adding secret event handler: %w", err)
	}
	if _, err := cfg.Copies.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: c.copyUpdated,
		DeleteFunc: c.copyDeleted,
	}); err != nil {
		return fmt.Errorf("adding pull-secret copy event handler: %w", err)
	}
	return nil
}

// enqueueJob queues the job for a sync.
func (c *Controller) enqueueJob(job *v1beta1.ImagePullJob) {
	c.jobQueue.Add(job.Namespace + "/" + job.Name)
}

// enqueueNodes queues the NodeImages of nodes for a sync.
func (c *Controller) enqueueNodes(nodes map[string]bool) {
	for n := range nodes {
		c.nodeQueue.Add(n)
	}
}

// jobAdded, jobUpdated and jobDeleted queue the job.
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

// nodeImageUpdated queues the node for its spec (only when the spec
// changed), the jobs whose requests the spec change withdrew
// (droppedOwners), the owners of tags whose status changed, the jobs a spec
// change leaves waiting (specWakes), and label-selector jobs whose match
// changed.
func (c *Controller) nodeImageUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*v1beta1.NodeImage)
	cur, ok2 := newObj.(*v1beta1.NodeImage)
	if !ok1 || !ok2 {
		return
	}
	if old.Generation != cur.Generation || old.UID != cur.UID {
		c.nodeQueue.Add(cur.Name)
		for key := range droppedOwners(old, cur) {
			c.jobQueue.Add(key)
		}
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

// secretChanged queues the unfinished jobs naming a secret whose type or
// data changed (or that appeared or went): whether it is usable may have.
func (c *Controller) secretChanged(oldObj, newObj any) {
	if tomb, ok := newObj.(cache.DeletedFinalStateUnknown); ok {
		newObj = tomb.Obj
	}
	cur, ok := newObj.(*corev1.Secret)
	if !ok {
		return
	}
	if old, ok := oldObj.(*corev1.Secret); ok && old.Type == cur.Type &&
		maps.EqualFunc(old.Data, cur.Data, bytes.Equal) {
		return
	}
	objs, err := c.jobIndexer.ByIndex(indexPullSecret, cur.Namespace+"/"+cur.Name)
	if err != nil {
		return
	}
	for _, o := range objs {
		if j, ok := o.(*v1beta1.ImagePullJob); ok {
			c.enqueueJob(j)
		}
	}
}
