package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// podBudgets is what the pod disruption webhook asks on every replica, leader or not: the
// Admitter reading the budgets from a cache of its own (the webhook clients), and the same
// Admitter reading them live until that cache has synced, so that a replica that has just
// started never takes "no budget in the cache" for "no budget".
type podBudgets struct {
	factory kruiseinformers.SharedInformerFactory
	synced  cache.InformerSynced
	cached  *podbudget.Admitter
	live    *podbudget.Admitter
	// recorder records the refusals on the pods (PubPreventPodDeletion, as OpenKruise); it
	// writes once start has given it a recorder.
	recorder *deferredRecorder
	client   kubernetes.Interface
	stop     func()
}

// newPodBudgets builds the cache and the two Admitters; nothing is called until start.
func newPodBudgets(client kubernetes.Interface, kruiseClient versioned.Interface, transform cache.TransformFunc) *podBudgets {
	f := kruiseinformers.NewSharedInformerFactoryWithOptions(kruiseClient, 0, kruiseinformers.WithTransform(transform))
	inf := f.Policy().V1alpha1().PodUnavailableBudgets()
	owners := liveOwners{client: client}
	rec := &deferredRecorder{}
	return &podBudgets{
		factory: f, synced: inf.Informer().HasSynced, recorder: rec, client: client,
		cached: podbudget.NewAdmitter(podbudget.AdmitterConfig{Client: kruiseClient, Budgets: inf.Lister(), Owners: owners, Recorder: rec}),
		live:   podbudget.NewAdmitter(podbudget.AdmitterConfig{Client: kruiseClient, Owners: owners, Recorder: rec}),
	}
}

// Admit implements disruption.Budget.
func (p *podBudgets) Admit(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (bool, string, error) {
	if p.synced() {
		return p.cached.Admit(ctx, pod, op, dryRun)
	}
	return p.live.Admit(ctx, pod, op, dryRun)
}

// start runs the cache and the Event recorder until ctx ends; shutdown waits for them.
func (p *podBudgets) start(ctx context.Context) {
	p.factory.Start(ctx.Done())
	var rec record.EventRecorder
	stop, err := events.Ensure(ctx, p.client, &rec)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Refusals of pod disruptions are not recorded as Events")
		return
	}
	p.stop = stop
	p.recorder.set(rec)
}

func (p *podBudgets) shutdown() {
	p.factory.Shutdown()
	if p.stop != nil {
		p.stop()
	}
}

// deferredRecorder forwards to a recorder set once the webhooks run (building one before would
// start its goroutines in a replica that may never serve); before that it drops Events.
type deferredRecorder struct {
	mu  sync.RWMutex
	rec record.EventRecorder
}

func (d *deferredRecorder) set(r record.EventRecorder) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rec = r
}

func (d *deferredRecorder) get() record.EventRecorder {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.rec
}

func (d *deferredRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	if r := d.get(); r != nil {
		r.Event(obj, eventtype, reason, message)
	}
}

func (d *deferredRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r := d.get(); r != nil {
		r.Eventf(obj, eventtype, reason, messageFmt, args...)
	}
}

func (d *deferredRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r := d.get(); r != nil {
		r.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	}
}

// liveOwners reads the controller of a pod's ReplicaSet (a Deployment, or a Rollout) with a GET:
// a webhook replica keeps no cache of ReplicaSets, and the climb is needed only for targetRef
// budgets naming a Deployment and for budgets per workload. Other kinds end the climb.
type liveOwners struct{ client kubernetes.Interface }

func (o liveOwners) ControllerOf(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != "apps" || ref.Kind != "ReplicaSet" {
		return nil, nil
	}
	rs, err := o.client.AppsV1().ReplicaSets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ReplicaSet %s/%s: %w", namespace, ref.Name, err)
	}
	if rs.UID != ref.UID && ref.UID != "" {
		return nil, nil // another ReplicaSet of that name
	}
	return metav1.GetControllerOf(rs), nil
}
