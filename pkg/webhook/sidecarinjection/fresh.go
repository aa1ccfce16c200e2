package sidecarinjection

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// freshTimeout bounds one live read of the SidecarSets.
const freshTimeout = 2 * time.Second

// freshReader lists the SidecarSets from the API server (a consistent read) for the pods whose
// injection cannot trust the cache, with at most one read in flight: a caller waits for a read
// that starts after it arrived (so it sees every SidecarSet stored before its pod was sent),
// and every caller that arrives while a read is in flight shares the next one. Whatever the
// rate of pods, a replica reads at most once per read's duration, and only while a SidecarSet
// the routing covers is not in its cache (Injector.behind): milliseconds after a SidecarSet is
// admitted, at most sidecarrules.PendingGrace after one that was never stored.
type freshReader struct {
	list func(ctx context.Context) ([]*appsv1beta1.SidecarSet, error)

	inFlight sync.Mutex // held by the read running
	mu       sync.Mutex
	next     *freshRead // the read not yet started, that arriving callers join
}

type freshRead struct {
	// waiters counts the callers sharing the read (under freshReader.mu).
	waiters int
	done    chan struct{}
	sets    []*appsv1beta1.SidecarSet
	err     error
}

func newFreshReader(client versioned.Interface) *freshReader {
	return &freshReader{list: func(ctx context.Context) ([]*appsv1beta1.SidecarSet, error) {
		list, err := client.AppsV1beta1().SidecarSets().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the SidecarSets from the API server: %w", err)
		}
		out := make([]*appsv1beta1.SidecarSet, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}}
}

// List returns the SidecarSets as a read started after the call has them.
func (f *freshReader) List(ctx context.Context) ([]*appsv1beta1.SidecarSet, error) {
	f.mu.Lock()
	r := f.next
	if r == nil {
		r = &freshRead{done: make(chan struct{})}
		f.next = r
		go f.run(r)
	}
	r.waiters++
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.sets, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a live read of the SidecarSets: %w", ctx.Err())
	}
}

func (f *freshReader) run(r *freshRead) {
	f.inFlight.Lock()
	defer f.inFlight.Unlock()
	f.mu.Lock()
	f.next = nil // callers from now on wait for a read that starts after this one
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), freshTimeout)
	defer cancel()
	r.sets, r.err = f.list(ctx)
	close(r.done)
}

// pendingReader reads sidecarrules.PendingAnnotation from a cache of the injection webhook's
// configuration; nothing while the cache has not synced.
type pendingReader struct {
	informer      cache.SharedIndexInformer
	configuration string
}

func (p pendingReader) Pending() sidecarrules.PendingSet {
	if !p.informer.HasSynced() {
		return nil
	}
	obj, ok, err := p.informer.GetStore().GetByKey(p.configuration)
	if err != nil || !ok {
		return nil
	}
	cfg, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if !ok {
		return nil
	}
	pending, _ := sidecarrules.ParsePending(cfg.Annotations)
	return pending
}
