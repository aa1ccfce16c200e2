package certs

import (
	"context"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/process/events"
)

// Run checks the Secret and the configured objects at once, then whenever
// one of them changes (a watch on each, by name), when a renewal or a
// deferred restore falls due, and at least every Resync; after a failed API
// call it checks again with a backoff from one second up to Resync. It
// returns when ctx ends. Every replica runs it: it is not leader-gated.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("controller", "webhook-certificates", "mode", string(m.cfg.Mode))
	ctx = klog.NewContext(ctx, logger)
	stopEvents, err := events.Ensure(ctx, m.cfg.Client, &m.recorder)
	if err != nil {
		return err
	}
	defer stopEvents()

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.watch(ctx, &wg)
	logger.Info("Starting webhook certificate manager", "secret", klog.KRef(m.cfg.Namespace, m.cfg.SecretName),
		"service", m.host, "crds", m.cfg.CRDs)

	backoff := time.Duration(0)
	for {
		next, failed := m.sync(ctx)
		next, backoff = nextWait(next, failed, backoff, m.cfg.Resync)
		timer := m.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			logger.Info("Stopped webhook certificate manager")
			return nil
		case <-m.poke:
			timer.Stop()
		case <-timer.C():
		}
	}
}

// nextWait is how long Run waits after a check that asked for next and
// failed or not, given the backoff so far; it returns the new backoff.
// After a failed API call the wait is one second, then doubles up to resync;
// a success resets it.
func nextWait(next time.Duration, failed bool, backoff, resync time.Duration) (time.Duration, time.Duration) {
	if !failed {
		return next, 0
	}
	backoff = min(max(2*backoff, time.Second), resync)
	return min(next, backoff), backoff
}

// trigger asks Run for a check soon; triggers coalesce.
func (m *Manager) trigger() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// watch starts an informer per watched object, each listing and watching
// only that object (field selector on its name): they only trigger checks,
// which read the objects themselves.
func (m *Manager) watch(ctx context.Context, wg *sync.WaitGroup) {
	start := func(name string, obj runtime.Object,
		list func(context.Context, metav1.ListOptions) (runtime.Object, error),
		watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
		byName := func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				byName(&o)
				return list(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				byName(&o)
				return watchFn(ctx, o)
			},
		}
		inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
		onName := func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if acc, err := meta.Accessor(o); err == nil && acc.GetName() != name {
				return
			}
			m.trigger()
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    onName,
			UpdateFunc: func(_, o any) { onName(o) },
			DeleteFunc: onName,
		}); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot watch, relying on periodic checks", "name", name)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			inf.RunWithContext(ctx)
		}()
	}

	secrets := m.cfg.Client.CoreV1().Secrets(m.cfg.Namespace)
	start(m.cfg.SecretName, &corev1.Secret{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return secrets.List(ctx, o) },
		secrets.Watch)
	mutating := m.cfg.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	start(m.cfg.MutatingWebhookConfiguration, &admissionregistrationv1.MutatingWebhookConfiguration{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return mutating.List(ctx, o) },
		mutating.Watch)
	validating := m.cfg.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	start(m.cfg.ValidatingWebhookConfiguration, &admissionregistrationv1.ValidatingWebhookConfiguration{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return validating.List(ctx, o)
		},
		validating.Watch)
	if len(m.cfg.CRDs) == 0 {
		return
	}
	crds := m.cfg.CRDClient.ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range m.cfg.CRDs {
		start(name, &apiextensionsv1.CustomResourceDefinition{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return crds.List(ctx, o) },
			crds.Watch)
	}
}
