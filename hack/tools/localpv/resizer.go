package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// annProvisionedBy names the provisioner of a dynamically provisioned volume.
const annProvisionedBy = "pv.kubernetes.io/provisioned-by"

// resizeConditions are the claim conditions of a resize under way or failed: none is left once
// the claim has its new size.
var resizeConditions = map[corev1.PersistentVolumeClaimConditionType]bool{
	corev1.PersistentVolumeClaimResizing:                true,
	corev1.PersistentVolumeClaimFileSystemResizePending: true,
	corev1.PersistentVolumeClaimControllerResizeError:   true,
	corev1.PersistentVolumeClaimNodeResizeError:         true,
}

// resizePlan is what growing a claim writes.
type resizePlan struct {
	// volumeCapacity is the PersistentVolume's new capacity; nil when it is large enough already.
	volumeCapacity *resource.Quantity
	// claimStatus is the claim's status once grown.
	claimStatus corev1.PersistentVolumeClaimStatus
}

// planResize says whether the claim, bound to pv, is to grow, and to what: when pv is one of
// provisioner's, bound to this claim, and the claim requests more storage than its
// status.capacity. The new size is the request, or pv's capacity if that is larger (a volume never
// shrinks). Sizes are bookkeeping only: a directory has no quota.
func planResize(provisioner string, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (resizePlan, bool) {
	if pv == nil || pvc.Spec.VolumeName != pv.Name || pvc.Status.Phase != corev1.ClaimBound ||
		pv.Annotations[annProvisionedBy] != provisioner || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return resizePlan{}, false
	}
	request, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return resizePlan{}, false
	}
	current := pvc.Status.Capacity[corev1.ResourceStorage]
	if request.Cmp(current) <= 0 {
		return resizePlan{}, false
	}
	var plan resizePlan
	size := request.DeepCopy()
	if volume := pv.Spec.Capacity[corev1.ResourceStorage]; volume.Cmp(size) < 0 {
		plan.volumeCapacity = &size
	} else {
		size = volume.DeepCopy()
	}
	st := *pvc.Status.DeepCopy()
	st.Capacity = withStorage(st.Capacity, size)
	st.AllocatedResources = withStorage(st.AllocatedResources, size)
	delete(st.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(st.AllocatedResourceStatuses) == 0 {
		st.AllocatedResourceStatuses = nil
	}
	var kept []corev1.PersistentVolumeClaimCondition
	for _, c := range st.Conditions {
		if !resizeConditions[c.Type] {
			kept = append(kept, c)
		}
	}
	st.Conditions = kept
	plan.claimStatus = st
	return plan, true
}

func withStorage(l corev1.ResourceList, q resource.Quantity) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	l[corev1.ResourceStorage] = q
	return l
}

// resizer grows the claims of provisioner's volumes (planResize); the writes are the only I/O.
type resizer struct {
	client      kubernetes.Interface
	provisioner string
	claims      corelisters.PersistentVolumeClaimLister
	volumes     corelisters.PersistentVolumeLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	recorder    record.EventRecorder
}

func newResizer(ctx context.Context, client kubernetes.Interface, provisioner string,
	claims coreinformers.PersistentVolumeClaimInformer, volumes coreinformers.PersistentVolumeInformer) *resizer {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	r := &resizer{
		client:      client,
		provisioner: provisioner,
		claims:      claims.Lister(),
		volumes:     volumes.Lister(),
		synced:      []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resize"}),
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "localpv-resizer"}),
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	_, _ = claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	// A claim may be seen before its volume: look at it again when the volume changes.
	onVolume := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
			r.queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		}
	}
	_, _ = volumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onVolume, UpdateFunc: func(_, obj any) { onVolume(obj) },
	})
	return r
}

func (r *resizer) run(ctx context.Context) error {
	defer r.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), r.synced...) {
		return ctx.Err()
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for r.next(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
	return ctx.Err()
}

func (r *resizer) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		// A claim written by someone else since the informer saw it is read again: not worth an error.
		if apierrors.IsConflict(err) {
			klog.FromContext(ctx).V(2).Info("Resizing again: the object changed", "pvc", key, "err", err)
		} else {
			utilruntime.HandleErrorWithContext(ctx, err, "Resizing", "pvc", key)
		}
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

func (r *resizer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pvc, err := r.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.Spec.VolumeName == "" {
		return nil
	}
	pv, err := r.volumes.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	plan, ok := planResize(r.provisioner, pvc, pv)
	if !ok {
		return nil
	}
	// The volume first, as a resizer that really grew storage would: a claim never says it has
	// more than its volume.
	if plan.volumeCapacity != nil {
		upd := pv.DeepCopy()
		upd.Spec.Capacity = withStorage(upd.Spec.Capacity, *plan.volumeCapacity)
		if _, err := r.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("growing PersistentVolume %s: %w", pv.Name, err)
		}
	}
	upd := pvc.DeepCopy()
	upd.Status = plan.claimStatus
	if _, err := r.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("recording the new size of PVC %s: %w", key, err)
	}
	size := plan.claimStatus.Capacity[corev1.ResourceStorage]
	klog.FromContext(ctx).Info("Resized", "pvc", klog.KObj(pvc), "pv", pv.Name, "size", size.String())
	r.recorder.Eventf(pvc, corev1.EventTypeNormal, "VolumeResizeSuccessful",
		"volume %s is now %s (a directory: the size is bookkeeping, not a quota)", pv.Name, size.String())
	return nil
}
