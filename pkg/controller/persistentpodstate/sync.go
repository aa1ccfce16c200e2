package persistentpodstate

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
)

// Run processes keys with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "key"}, n)
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	if rest, ok := strings.CutPrefix(key, generatePrefix); ok {
		return 0, c.syncGenerated(ctx, rest)
	}
	if rest, ok := strings.CutPrefix(key, statusPrefix); ok {
		return 0, c.syncStatus(ctx, rest)
	}
	return 0, nil
}

// target is the workload a PersistentPodState names, as Desired reads it, with its uid; nil
// when it does not exist or is not a supported kind.
func (c *Controller) target(namespace string, ref appsv1alpha1.TargetReference) (*Workload, types.UID, error) {
	g, ok := supportedGroup(ref.APIVersion, ref.Kind)
	if !ok {
		return nil, "", nil
	}
	if g == appsv1.GroupName {
		sts, err := c.sts.StatefulSets(namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		} else if err != nil {
			return nil, "", err
		}
		w := &Workload{Replicas: int(ptr.Deref(sts.Spec.Replicas, 1)), Deleting: sts.DeletionTimestamp != nil}
		if sts.Spec.Ordinals != nil {
			w.StartOrdinal = int(sts.Spec.Ordinals.Start)
		}
		return w, sts.UID, nil
	}
	sts, err := c.asts.StatefulSets(namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", err
	}
	w := &Workload{Replicas: int(ptr.Deref(sts.Spec.Replicas, 1)), Deleting: sts.DeletionTimestamp != nil}
	if sts.Spec.Ordinals != nil && !c.ignoreOrdinalsStart {
		w.StartOrdinal = int(sts.Spec.Ordinals.Start)
	}
	// Unparsable entries are refused by the CRD's rules; were one stored, the ones read are used.
	w.Reserved, _ = ordinals.Parse(sts.Spec.ReserveOrdinals)
	return w, sts.UID, nil
}

func (c *Controller) syncStatus(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pps, err := c.states.PersistentPodStates(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("persistentPodState", klog.KObj(pps))
	ctx = klog.NewContext(ctx, logger)
	w, uid, err := c.target(namespace, pps.Spec.TargetReference)
	if err != nil {
		return err
	}
	in := Input{
		Spec: pps.Spec, Current: pps.Status.PodStates, Workload: w,
		NodeLabels:  c.nodeLabels,
		ValueExists: c.valueExists,
	}
	var byName map[string]*corev1.Pod
	if w != nil {
		in.Pods, byName, err = c.pods(namespace, pps.Spec.TargetReference, uid)
		if err != nil {
			return err
		}
	}
	for _, podName := range AnnotationsToRead(in, pps.Status.ObservedGeneration != pps.Generation) {
		annos, err := c.readAnnotations(ctx, byName[podName])
		if err != nil {
			return err
		}
		for i := range in.Pods {
			if in.Pods[i].Name == podName {
				in.Pods[i].Annotations = annos
			}
		}
	}
	desired := Desired(in)
	if SameStates(desired, pps.Status.PodStates) && pps.Status.ObservedGeneration == pps.Generation {
		return nil
	}
	next := pps.DeepCopy()
	next.Status = appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: pps.Generation, PodStates: desired}
	if _, err := c.kruiseClient.AppsV1alpha1().PersistentPodStates(namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of PersistentPodState %s: %w", key, err)
	}
	logger.V(3).Info("Recorded pod states", "before", len(pps.Status.PodStates), "after", len(desired))
	return nil
}

// pods are the workload's pods (controlled by uid), as Desired reads them, and by name.
func (c *Controller) pods(namespace string, ref appsv1alpha1.TargetReference, uid types.UID) ([]Pod, map[string]*corev1.Pod, error) {
	g, _ := supportedGroup(ref.APIVersion, ref.Kind)
	objs, err := c.podIndexer.ByIndex(targetIndex, TargetKey(namespace, g, ref.Name))
	if err != nil {
		return nil, nil, fmt.Errorf("listing the pods of %s: %w", ref.Name, err)
	}
	var out []Pod
	byName := map[string]*corev1.Pod{}
	for _, o := range objs {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref == nil || ref.UID != uid {
			continue
		}
		byName[pod.Name] = pod
		out = append(out, Pod{Name: pod.Name, NodeName: pod.Spec.NodeName, Ready: podReady(pod) && pod.DeletionTimestamp == nil})
	}
	return out, byName, nil
}

// readAnnotations reads a pod's annotations from the API server: the cache keeps only kruise's.
// A pod gone meanwhile has none (it is recorded without them, and read again when it returns).
func (c *Controller) readAnnotations(ctx context.Context, cached *corev1.Pod) (map[string]string, error) {
	if cached == nil {
		return map[string]string{}, nil
	}
	pod, err := c.client.CoreV1().Pods(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]string{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the annotations of pod %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	if pod.UID != cached.UID || pod.Annotations == nil {
		return map[string]string{}, nil
	}
	return pod.Annotations, nil
}

func (c *Controller) nodeLabels(name string) (map[string]string, bool) {
	node, err := c.nodes.Get(name)
	if err != nil {
		return nil, false
	}
	return node.Labels, true
}

func (c *Controller) valueExists(key, value string) bool {
	objs, err := c.nodeIndexer.ByIndex(labelIndex, key+"="+value)
	return err == nil && len(objs) > 0
}

// syncGenerated creates, updates or deletes the PersistentPodState a workload asks for by
// annotation. A deleted workload's is deleted by the garbage collector (its owner reference).
func (c *Controller) syncGenerated(ctx context.Context, key string) error {
	namespace, group, name, ok := splitTargetKey(key)
	if !ok {
		return nil
	}
	var meta *metav1.ObjectMeta
	var ref appsv1alpha1.TargetReference
	if group == appsv1.GroupName {
		sts, err := c.sts.StatefulSets(namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		meta, ref = &sts.ObjectMeta, appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name}
	} else {
		sts, err := c.asts.StatefulSets(namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		meta, ref = &sts.ObjectMeta, appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: name}
	}
	if meta.DeletionTimestamp != nil {
		return nil
	}
	existing, err := c.states.PersistentPodStates(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		existing = nil
	} else if err != nil {
		return err
	}
	want, asked := GeneratedSpec(ref, meta.Annotations)
	want = KeepRetention(want, existing)
	logger := klog.FromContext(ctx).WithValues("workload", klog.KRef(namespace, name), "group", group)
	api := c.kruiseClient.AppsV1alpha1().PersistentPodStates(namespace)
	switch DecideGenerated(string(meta.UID), want, asked, existing) {
	case GenerateCreate:
		pps := &appsv1alpha1.PersistentPodState{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: ref.APIVersion, Kind: ref.Kind, Name: name, UID: meta.UID, Controller: ptr.To(true),
			}}},
			Spec: want,
		}
		if _, err := api.Create(ctx, pps, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the PersistentPodState of %s: %w", key, err)
		}
		logger.Info("Created the PersistentPodState the workload asks for")
	case GenerateUpdate:
		next := existing.DeepCopy()
		next.Spec = want
		if _, err := api.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the PersistentPodState of %s: %w", key, err)
		}
		logger.Info("Updated the PersistentPodState the workload asks for")
	case GenerateDelete:
		err := api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting the PersistentPodState of %s: %w", key, err)
		}
		logger.Info("Deleted the PersistentPodState the workload no longer asks for")
	case GenerateConflict:
		logger.Info("Not generating a PersistentPodState: one of the workload's name exists that it does not control")
	}
	return nil
}
