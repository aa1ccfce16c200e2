package sidecarset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

func (c *Controller) addHandlers(cfg Config) error {
	if _, err := cfg.SidecarSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSidecarSet,
		UpdateFunc: func(_, cur any) { c.enqueueSidecarSet(cur) },
		DeleteFunc: c.sidecarSetDeleted,
	}); err != nil {
		return fmt.Errorf("adding the SidecarSet event handler: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	}); err != nil {
		return fmt.Errorf("adding the pod event handler: %w", err)
	}
	if _, err := cfg.Revisions.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.revisionChanged,
		UpdateFunc: func(_, cur any) { c.revisionChanged(cur) },
		DeleteFunc: c.revisionChanged,
	}); err != nil {
		return fmt.Errorf("adding the ControllerRevision event handler: %w", err)
	}
	return nil
}

func (c *Controller) enqueueSidecarSet(obj any) {
	if ss, ok := obj.(*appsv1beta1.SidecarSet); ok {
		c.queue.Add(ss.Name)
	}
}

func (c *Controller) sidecarSetDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ss, ok := obj.(*appsv1beta1.SidecarSet)
	if !ok {
		return
	}
	c.forget(ss.Name)
	c.queue.Add(ss.Name)
}

func (c *Controller) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.podVersions.Observe(pod)
	c.enqueueFor(pod)
}

func (c *Controller) podUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	c.podVersions.Observe(cur)
	c.enqueueFor(cur)
	if !labels.Equals(old.Labels, cur.Labels) {
		c.enqueueFor(old)
	}
}

func (c *Controller) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.podVersions.Forget(pod)
	c.enqueueFor(pod)
}

// enqueueFor queues the SidecarSets a pod's change may concern: those that select it and those
// it records as injected (a pod relabelled out of a selector is still counted until it is
// resynced).
func (c *Controller) enqueueFor(pod *corev1.Pod) {
	for _, name := range sidecarrules.Injected(pod) {
		c.queue.Add(name)
	}
	if specs, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashAnnotation); err == nil {
		for name := range specs {
			c.queue.Add(name)
		}
	}
	all, err := c.sidecarSets.List(labels.Everything())
	if err != nil || len(all) == 0 {
		return
	}
	nsLabels := c.namespaceLabels(pod.Namespace)
	for _, ss := range all {
		if ok, _ := sidecarrules.Selects(ss, pod, nsLabels); ok {
			c.queue.Add(ss.Name)
		}
	}
}

// namespaceLabels are the labels of the cached namespace; a namespace not cached (yet) has at
// least the label every namespace carries, its name.
func (c *Controller) namespaceLabels(name string) map[string]string {
	ns, err := c.namespaces.Get(name)
	if err != nil || ns.Labels == nil {
		return map[string]string{corev1.LabelMetadataName: name}
	}
	return ns.Labels
}

// revisionChanged queues the SidecarSet a ControllerRevision of kruise's namespace belongs to:
// one deleted behind the controller's back is made again.
func (c *Controller) revisionChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	rev, ok := obj.(*appsv1.ControllerRevision)
	if !ok || rev.Namespace != c.namespace {
		return
	}
	if name := rev.Labels[sidecarrules.NameLabel]; name != "" {
		c.queue.Add(name)
	}
}
