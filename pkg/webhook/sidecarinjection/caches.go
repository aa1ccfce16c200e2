package sidecarinjection

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// Caches are the informers the webhook reads: SidecarSets and Namespaces cluster-wide, and the
// ControllerRevisions of the namespace kruise runs in (where SidecarSets' revisions live). Every
// replica runs them with its webhook server, leader or not.
type Caches struct {
	core      informers.SharedInformerFactory
	revisions informers.SharedInformerFactory
	kruise    kruiseinformers.SharedInformerFactory
	// config watches the injection webhook's configuration (by name) for the SidecarSets admitted
	// that the caches may not have yet (sidecarrules.PendingAnnotation); nil without one.
	config   cache.SharedIndexInformer
	synced   []cache.InformerSynced
	injector *Injector
}

// NewCaches builds the informers (transform, if not nil, trims what they keep) and the Injector
// reading them; nothing is called until Start. configuration names the MutatingWebhookConfiguration
// of the injection webhook ("": none), whose pending SidecarSets make the Injector read the
// SidecarSets live while its cache lacks one of them.
func NewCaches(client kubernetes.Interface, kruiseClient versioned.Interface, namespace, configuration string, transform cache.TransformFunc) *Caches {
	c := &Caches{
		core: informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(transform)),
		revisions: informers.NewSharedInformerFactoryWithOptions(client, 0,
			informers.WithNamespace(namespace), informers.WithTransform(transform)),
		kruise: kruiseinformers.NewSharedInformerFactoryWithOptions(kruiseClient, 0, kruiseinformers.WithTransform(transform)),
	}
	ss := c.kruise.Apps().V1beta1().SidecarSets()
	ns := c.core.Core().V1().Namespaces()
	revs := c.revisions.Apps().V1().ControllerRevisions()
	c.synced = []cache.InformerSynced{ss.Informer().HasSynced, ns.Informer().HasSynced, revs.Informer().HasSynced}
	c.injector = &Injector{
		SidecarSets:     sidecarSetLister{ss.Lister()},
		Namespaces:      namespaceLister{ns.Lister()},
		Revisions:       revisionLister{revs.Lister().ControllerRevisions(namespace)},
		KruiseNamespace: namespace,
		WaitSynced:      c.WaitSynced,
	}
	if configuration != "" {
		byName := fields.OneTermEqualSelector(metav1.ObjectNameField, configuration).String()
		c.config = admissioninformers.NewFilteredMutatingWebhookConfigurationInformer(client, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.FieldSelector = byName })
		c.injector.Pending = pendingReader{informer: c.config, configuration: configuration}.Pending
		c.injector.Fresh = newFreshReader(kruiseClient).List
	}
	return c
}

// Injector is the webhook's Injector, reading these caches.
func (c *Caches) Injector() *Injector { return c.injector }

// Start starts the informers; they stop when ctx ends.
func (c *Caches) Start(ctx context.Context) {
	c.core.Start(ctx.Done())
	c.revisions.Start(ctx.Done())
	c.kruise.Start(ctx.Done())
	if c.config != nil {
		// Not waited for (WaitSynced): until it syncs, nothing is pending, as before.
		go c.config.RunWithContext(ctx)
	}
}

// Shutdown waits for the informers to stop (after ctx of Start ended).
func (c *Caches) Shutdown() {
	c.core.Shutdown()
	c.revisions.Shutdown()
	c.kruise.Shutdown()
}

// syncWait bounds how long a request waits for the caches of a replica that has just started.
// It is well below the webhook's timeout (5 s by default), so the answer is kruise's refusal,
// which says why, rather than the API server's timeout.
const syncWait = 2 * time.Second

// errNotSynced refuses a pod while the caches are empty: injecting from an empty list would
// create the pod without its sidecars.
var errNotSynced = errors.New("this kruise-controller replica has not read the SidecarSets yet (its caches have not synced); the pod is refused rather than created without its sidecars: create it again")

// WaitSynced waits, at most syncWait and while ctx lasts, for the caches to sync. It is not a
// /readyz check: a replica must take requests (and answer /convert) before it can list the
// SidecarSets, because listing them can itself need /convert, when they are stored in another
// version, and the API server calls only ready replicas. Until they have synced, the pods a
// SidecarSet may select are refused with errNotSynced; no other pod is sent (matchConditions).
func (c *Caches) WaitSynced(ctx context.Context) error {
	if c.hasSynced() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) { return c.hasSynced(), nil })
	if err != nil {
		return errNotSynced
	}
	return nil
}

func (c *Caches) hasSynced() bool {
	for _, synced := range c.synced {
		if !synced() {
			return false
		}
	}
	return true
}

type sidecarSetLister struct {
	l kruiselisters.SidecarSetLister
}

func (s sidecarSetLister) List() ([]*appsv1beta1.SidecarSet, error) {
	return s.l.List(labels.Everything())
}

type namespaceLister struct{ l corelisters.NamespaceLister }

func (n namespaceLister) Labels(name string) (map[string]string, error) {
	ns, err := n.l.Get(name)
	if apierrors.IsNotFound(err) {
		return map[string]string{corev1.LabelMetadataName: name}, nil
	}
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

type revisionLister struct {
	l appslisters.ControllerRevisionNamespaceLister
}

func (r revisionLister) Revision(name string) (*appsv1.ControllerRevision, error) {
	rev, err := r.l.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return rev, err
}

func (r revisionLister) Revisions(sidecarSet, customVersion string) ([]*appsv1.ControllerRevision, error) {
	set := labels.Set{sidecarrules.NameLabel: sidecarSet}
	if customVersion != "" {
		set[appsv1beta1.SidecarSetCustomVersionLabel] = customVersion
	}
	revs, err := r.l.List(labels.SelectorFromSet(set))
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	return revs, nil
}
