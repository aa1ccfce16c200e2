//go:build bench

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// bcjPodObserver watches the pods of one namespace for the BroadcastJob benchmark: when the
// last of the wanted pods appeared and when the last one Succeeded, and whether any node got
// two pods or a pod was deleted on the way. Its watch is the benchmark's (admin's): the audit
// log and the controller's figures leave it out.
type bcjPodObserver struct {
	want int
	stop func()

	mu sync.Mutex
	// pods by UID: their node once bound, and whether they Succeeded.
	pods      map[types.UID]*bcjPodSeen
	deleted   int
	failed    int
	succeeded int
	// allCreated and allSucceeded are when the counts first reached want.
	allCreated, allSucceeded time.Time
}

type bcjPodSeen struct {
	node              string
	succeeded, failed bool
}

// observeBCJPods starts watching ns and returns once the watch has synced.
func observeBCJPods(ctx context.Context, c *kwokCluster, ns string, want int) (*bcjPodObserver, error) {
	o := &bcjPodObserver{want: want, pods: map[types.UID]*bcjPodSeen{}}
	lw := cache.NewListWatchFromClient(c.kube.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.saw(obj) },
		UpdateFunc: func(_, obj any) { o.saw(obj) },
		DeleteFunc: func(any) {
			o.mu.Lock()
			o.deleted++
			o.mu.Unlock()
		},
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx.Done())
	}()
	o.stop = func() {
		cancel()
		<-done
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		o.stop()
		return nil, fmt.Errorf("the pod watch of %s did not sync", ns)
	}
	return o, nil
}

func (o *bcjPodObserver) saw(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.pods[pod.UID]
	if p == nil {
		p = &bcjPodSeen{}
		o.pods[pod.UID] = p
		if len(o.pods) == o.want {
			o.allCreated = now
		}
	}
	if pod.Spec.NodeName != "" {
		p.node = pod.Spec.NodeName
	}
	if pod.Status.Phase == corev1.PodFailed && !p.failed {
		p.failed = true
		o.failed++
	}
	if pod.Status.Phase == corev1.PodSucceeded && !p.succeeded {
		p.succeeded = true
		o.succeeded++
		if o.succeeded == o.want {
			o.allSucceeded = now
		}
	}
}

// times are the durations from since to all pods created and to all Succeeded (0: not yet).
func (o *bcjPodObserver) times(since time.Time) (created, succeeded time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.allCreated.IsZero() {
		created = o.allCreated.Sub(since)
	}
	if !o.allSucceeded.IsZero() {
		succeeded = o.allSucceeded.Sub(since)
	}
	return created, succeeded
}

func (o *bcjPodObserver) progress() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	bound := 0
	for _, p := range o.pods {
		if p.node != "" {
			bound++
		}
	}
	return fmt.Sprintf("%d pods created, %d bound, %d Succeeded, %d failed, %d deleted", len(o.pods), bound, o.succeeded, o.failed, o.deleted)
}

// check says what is wrong with the pods seen: not one per node, a pod deleted or failed; "" if
// nothing.
func (o *bcjPodObserver) check() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	perNode := map[string]int{}
	unbound := 0
	for _, p := range o.pods {
		if p.node == "" {
			unbound++
			continue
		}
		perNode[p.node]++
	}
	twice := 0
	for _, n := range perNode {
		if n > 1 {
			twice++
		}
	}
	if len(o.pods) != o.want || len(perNode) != o.want || twice > 0 || unbound > 0 || o.deleted > 0 || o.failed > 0 {
		return fmt.Sprintf("%d pods on %d nodes (want %d, one each): %d nodes with more than one, %d unbound, %d deleted, %d failed",
			len(o.pods), len(perNode), o.want, twice, unbound, o.deleted, o.failed)
	}
	return ""
}
