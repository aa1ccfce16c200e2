package broadcastjob

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// sync runs one pass over the job key names: it waits for what the cache has not shown yet,
// asks Decide, and carries the plan out (deletions, creations, Events, status, the job's own
// deletion after its TTL).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	job, err := c.jobs.BroadcastJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expect.Forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading BroadcastJob %s: %w", key, err)
	}
	if ok, recheck := c.expect.Satisfied(ctx, key); !ok {
		logger.V(4).Info("Waiting for the cache to show the pods created and deleted", "pending", len(c.expect.Pending(key)))
		return recheck, nil
	}
	pods, err := ownership.Owned[*corev1.Pod](c.podIndex, controllerKind, job)
	if err != nil {
		return 0, err
	}
	var nodes []*corev1.Node
	if !Finished(job) {
		if nodes, err = c.nodes.List(labels.Everything()); err != nil {
			return 0, fmt.Errorf("listing nodes: %w", err)
		}
	}
	plan := Decide(job, nodes, pods, c.clock.Now())

	if plan.DeleteJob {
		logger.V(2).Info("Deleting the BroadcastJob, its ttlSecondsAfterFinished has passed")
		err := c.kruiseClient.AppsV1beta1().BroadcastJobs(ns).Delete(ctx, name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &job.UID},
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("deleting BroadcastJob %s after its TTL: %w", key, err)
		}
		return 0, nil
	}

	var errs []error
	c.deletePods(ctx, job, key, plan.Delete, &errs)
	created := c.createPods(ctx, job, key, plan.Create, &errs)
	// Only pods the API server accepted are active (OpenKruise #2414 counted failed creations).
	plan.Status.Active += int32(created)
	for _, e := range plan.Events {
		c.recorder.Event(job, e.Type, e.Reason, e.Message)
	}
	if !apiequality.Semantic.DeepEqual(job.Status, plan.Status) {
		updated := job.DeepCopy()
		updated.Status = plan.Status
		if _, err := c.kruiseClient.AppsV1beta1().BroadcastJobs(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, nil
			}
			errs = append(errs, fmt.Errorf("writing the status of BroadcastJob %s: %w", key, err))
		}
	}
	return plan.Requeue, errors.Join(errs...)
}

// deletePods deletes pods concurrently, each expected until the cache shows it going.
func (c *Controller) deletePods(ctx context.Context, job *v1beta1.BroadcastJob, key string, pods []*corev1.Pod, errs *[]error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.expect.DeletePod(ctx, c.client.CoreV1(), key, pod)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonDeleted, "Deleted pod %s (node %s)", pod.Name, nodefit.TargetNode(pod))
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			default:
				c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonDeleteFailed, "Deleting pod %s: %v", pod.Name, err)
				*errs = append(*errs, fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
		}()
	}
	wg.Wait()
}

// createPods creates one pod per node in slow-start batches, each expected by node until the
// cache shows it. It returns how many the API server accepted.
func (c *Controller) createPods(ctx context.Context, job *v1beta1.BroadcastJob, key string, nodes []string, errs *[]error) int {
	if len(nodes) == 0 {
		return 0
	}
	logger := klog.FromContext(ctx)
	c.expect.Expect(key, expectations.Create, nodePods, nodes...)
	var mu sync.Mutex
	tried := make([]bool, len(nodes))
	created, err := workers.SlowStart(len(nodes), func(i int) error {
		node := nodes[i]
		mu.Lock()
		tried[i] = true
		mu.Unlock()
		pod, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, NewPod(job, node), metav1.CreateOptions{})
		if err != nil {
			if !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) {
				// No pod will show: stop waiting for one. A timeout may still have made it,
				// so that expectation stays until the pod shows or it times out.
				c.expect.Observe(key, expectations.Create, nodePods, node)
			}
			return fmt.Errorf("creating the pod for node %s: %w", node, err)
		}
		logger.V(4).Info("Created pod", "pod", klog.KObj(pod), "node", node)
		return nil
	})
	// Nodes after the failing batch were never tried: nothing will show for them.
	for i, node := range nodes {
		if !tried[i] {
			c.expect.Observe(key, expectations.Create, nodePods, node)
		}
	}
	if err != nil {
		c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonCreateFailed, "Creating pods: %v", err)
		*errs = append(*errs, err)
	}
	return created
}

// NewPod is the job's pod for node: the template's labels (with broadcastjob-name and
// broadcastjob-controller-uid), annotations and spec, named <job>-<random>, controlled by the
// job (blockOwnerDeletion), its required node affinity replaced by the node's name so that the
// scheduler binds it there (OpenKruise's default, --assign-bcj-pods-by-scheduler=true).
func NewPod(job *v1beta1.BroadcastJob, node string) *corev1.Pod {
	owner := *metav1.NewControllerRef(job, controllerKind)
	pod := ownership.PodFromTemplate(job.Spec.Template.DeepCopy(), "", job.Namespace, owner)
	pod.GenerateName = job.Name + "-"
	pod.Labels[v1beta1.BroadcastJobNameLabel] = job.Name
	pod.Labels[v1beta1.BroadcastJobControllerUIDLabel] = string(job.UID)
	nodefit.PinToNode(&pod.Spec, node)
	return pod
}
