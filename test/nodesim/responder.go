package nodesim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
)

// Defaults of ResponderConfig.
const (
	DefaultResponderWorkers = 4
	DefaultResponderQPS     = 50
	DefaultResponderBurst   = 100
)

// retryAfter spaces the attempts of a status write that failed.
const retryAfter = time.Second

// ResponderConfig configures a Responder.
type ResponderConfig struct {
	Client versioned.Interface
	// Run limits the responder to the NodeImages of one run (Label=Run); empty: every simulated
	// node.
	Run string
	// PullTime is how long a simulated pull takes, from the moment the responder first sees a
	// tag version in the spec to its Succeeded status.
	PullTime time.Duration
	// ReportPulling writes a Pulling status as soon as a pull starts, then the result: the two
	// writes the daemon makes when its status rate limit lets both out. Off, a pull's only write
	// is its result, which is what the daemon sends when the pull ends before its next status
	// write is due; it halves the writes and the controller's reconciles per pull.
	ReportPulling bool
	// Workers bounds the NodeImages handled at once; zero is DefaultResponderWorkers.
	Workers int
	// QPS and Burst bound the status writes of all simulated nodes together; zero is
	// DefaultResponderQPS and DefaultResponderBurst.
	QPS   float64
	Burst int
	// Clock times pulls and retries; nil is the real clock.
	Clock clock.WithTicker
}

// Responder acts for the kruise-daemons of simulated nodes: it "pulls" every tag version their
// NodeImages' specs ask for and writes the NodeImage status as pkg/daemon/imagepull does, one
// merge patch of the status subresource per NodeImage and change. Nothing is pulled.
//
// As in the daemon, a pull is keyed by tag and runs for one version: a tag whose version
// changes is pulled again, a tag that leaves the spec leaves the status, and on first sight of
// a NodeImage its finished results for the spec's current versions are taken over rather than
// pulled again. Unlike the daemon, a pull never fails, no Waiting state is written, and
// firstSyncStatus is set with a node's first write caused by a pull rather than on a write of
// its own (which would cost one write per simulated node before anything happens).
//
// One shared informer (selected by Label) feeds a work queue; Workers goroutines handle the
// queued NodeImages and one rate limiter bounds the writes, so a responder for thousands of
// nodes costs about as much as the writes it makes.
type Responder struct {
	client      versioned.Interface
	pullTime    time.Duration
	pulling     bool
	workers     int
	clock       clock.WithTicker
	limiter     *rate.Limiter
	factory     kruiseinformers.SharedInformerFactory
	informer    cache.SharedIndexInformer
	queue       workqueue.TypedRateLimitingInterface[string]
	writes      atomic.Int64
	pulls       atomic.Int64
	writeErrors atomic.Int64

	mu    sync.Mutex
	nodes map[string]*simNode
}

// simNode is what a responder remembers of one NodeImage.
type simNode struct {
	uid  types.UID
	tags map[pullKey]*simPull
	// written is the status the server holds as far as we know: the last one written, or the
	// one found on first sight. Nobody else writes a simulated node's status.
	written *appsv1beta1.NodeImageStatus
}

type pullKey struct{ repo, tag string }

// simPull is one tag's simulated pull, for one version.
type simPull struct {
	version int64
	phase   appsv1beta1.ImagePullPhase
	start   metav1.Time
	end     *metav1.Time
	imageID string
	message string
}

// NewResponder builds a responder; Run starts it.
func NewResponder(cfg ResponderConfig) (*Responder, error) {
	if cfg.Client == nil {
		return nil, errors.New("nodesim: ResponderConfig.Client is required")
	}
	r := &Responder{
		client:   cfg.Client,
		pullTime: max(cfg.PullTime, 0),
		pulling:  cfg.ReportPulling,
		workers:  cfg.Workers,
		clock:    cfg.Clock,
		nodes:    map[string]*simNode{},
	}
	if r.workers <= 0 {
		r.workers = DefaultResponderWorkers
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps <= 0 {
		qps = DefaultResponderQPS
	}
	if burst <= 0 {
		burst = DefaultResponderBurst
	}
	r.limiter = rate.NewLimiter(rate.Limit(qps), burst)
	selector := Label
	if cfg.Run != "" {
		selector = Label + "=" + cfg.Run
	}
	r.factory = kruiseinformers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		kruiseinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		kruiseinformers.WithTransform(dropManagedFields))
	r.informer = r.factory.Apps().V1beta1().NodeImages().Informer()
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryAfter, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: r.clock})
	if _, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: r.enqueue,
		// Only spec changes ask for pulls; the echoes of our own status writes are ignored.
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*appsv1beta1.NodeImage)
			n, ok2 := newObj.(*appsv1beta1.NodeImage)
			if ok1 && ok2 && o.Generation == n.Generation && o.UID == n.UID {
				return
			}
			r.enqueue(newObj)
		},
		DeleteFunc: r.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("adding the responder's NodeImage event handler: %w", err)
	}
	return r, nil
}

// dropManagedFields keeps the informer's copies small: nothing here reads managedFields.
func dropManagedFields(obj any) (any, error) {
	if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
		ni.ManagedFields = nil
	}
	return obj, nil
}

func (r *Responder) enqueue(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
		r.queue.Add(ni.Name)
	}
}

// Run responds until ctx ends. It returns an error only when the informer cannot sync.
func (r *Responder) Run(ctx context.Context) error {
	defer r.queue.ShutDown()
	r.factory.Start(ctx.Done())
	defer r.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("nodesim: the responder's NodeImage cache did not sync")
	}
	klog.FromContext(ctx).V(2).Info("Responder started", "workers", r.workers, "pullTime", r.pullTime)
	var wg sync.WaitGroup
	for range r.workers {
		wg.Go(func() {
			for r.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	r.queue.ShutDown()
	wg.Wait()
	return nil
}

// WaitForCacheSync waits until the responder's informer has listed every NodeImage, so that
// work created afterwards is seen as a change.
func (r *Responder) WaitForCacheSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced)
}

// Writes is the number of status writes made so far.
func (r *Responder) Writes() int64 { return r.writes.Load() }

// Pulls is the number of simulated pulls that succeeded so far.
func (r *Responder) Pulls() int64 { return r.pulls.Load() }

// WriteErrors is the number of status writes that failed (and were retried).
func (r *Responder) WriteErrors() int64 { return r.writeErrors.Load() }

// Pending is the number of tags whose simulated pull has not finished.
func (r *Responder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.nodes {
		for _, p := range s.tags {
			if p.end == nil {
				n++
			}
		}
	}
	return n
}

func (r *Responder) next(ctx context.Context) bool {
	name, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(name)
	after, err := r.respond(ctx, name)
	if err != nil {
		r.writeErrors.Add(1)
		klog.FromContext(ctx).V(2).Info("Simulated status write failed; retrying", "nodeImage", name, "err", err)
		r.queue.AddRateLimited(name)
		return true
	}
	r.queue.Forget(name)
	if after > 0 {
		r.queue.AddAfter(name, after)
	}
	return true
}

// respond brings one NodeImage's simulated pulls in line with its spec and writes the status
// when it differs from the last one written. It returns when the next pull of the node ends.
func (r *Responder) respond(ctx context.Context, name string) (time.Duration, error) {
	obj, exists, err := r.informer.GetIndexer().GetByKey(name)
	if err != nil {
		return 0, err
	}
	ni, ok := obj.(*appsv1beta1.NodeImage)
	if !exists || !ok {
		r.forget(name)
		return 0, nil
	}
	desired, written, after := r.advance(ni)
	if written != nil && equality.Semantic.DeepEqual(desired, written) {
		return after, nil
	}
	patch, err := appsv1beta1.StatusMergePatch(written, desired)
	if err != nil {
		return 0, err
	}
	if err := r.limiter.Wait(ctx); err != nil {
		return 0, err
	}
	_, err = r.client.AppsV1beta1().NodeImages().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		r.forget(name)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("patching the status of NodeImage %s: %w", name, err)
	}
	r.writes.Add(1)
	r.mu.Lock()
	if s := r.nodes[name]; s != nil && s.uid == ni.UID {
		s.written = desired
	}
	r.mu.Unlock()
	return after, nil
}

func (r *Responder) forget(name string) {
	r.mu.Lock()
	delete(r.nodes, name)
	r.mu.Unlock()
}

// advance updates the node's pulls from ni's spec and the clock, and returns the status they
// make, the status last written, and when the next unfinished pull ends (zero: none left).
func (r *Responder) advance(ni *appsv1beta1.NodeImage) (desired, written *appsv1beta1.NodeImageStatus, after time.Duration) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.nodes[ni.Name]
	var restore map[pullKey]appsv1beta1.ImageTagStatus
	if s == nil || s.uid != ni.UID {
		// First sight (or a new NodeImage of the same name): take over its finished results, as
		// a restarted daemon does.
		s = &simNode{uid: ni.UID, tags: map[pullKey]*simPull{}, written: ni.Status.DeepCopy()}
		r.nodes[ni.Name] = s
		restore = finishedResults(&ni.Status)
	}
	wanted := map[pullKey]bool{}
	for repo, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			k := pullKey{repo, t.Tag}
			if wanted[k] {
				continue
			}
			wanted[k] = true
			if p := s.tags[k]; p != nil && p.version == t.Version {
				continue
			}
			if prev, ok := restore[k]; ok && prev.Version == t.Version {
				s.tags[k] = restored(prev)
				continue
			}
			s.tags[k] = &simPull{version: t.Version, phase: appsv1beta1.ImagePhasePulling, start: seconds(now)}
		}
	}
	for k, p := range s.tags {
		if !wanted[k] {
			delete(s.tags, k)
			continue
		}
		if p.end != nil {
			continue
		}
		if due := p.start.Add(r.pullTime); now.Before(due) {
			if left := due.Sub(now); after == 0 || left < after {
				after = left
			}
			continue
		}
		end := seconds(now)
		p.phase, p.end, p.imageID = appsv1beta1.ImagePhaseSucceeded, &end, imageID(k)
		r.pulls.Add(1)
	}
	return r.statusLocked(ni, s), s.written, after
}

// statusLocked is the status of the spec's tags, in the shape pkg/daemon/imagepull writes it.
func (r *Responder) statusLocked(ni *appsv1beta1.NodeImage, s *simNode) *appsv1beta1.NodeImageStatus {
	out := &appsv1beta1.NodeImageStatus{}
	for repo, img := range ni.Spec.Images {
		seen := map[string]bool{}
		var tags []appsv1beta1.ImageTagStatus
		for _, t := range img.Tags {
			p := s.tags[pullKey{repo, t.Tag}]
			if seen[t.Tag] || p == nil || (p.end == nil && !r.pulling) {
				continue
			}
			seen[t.Tag] = true
			start := p.start
			tags = append(tags, appsv1beta1.ImageTagStatus{
				Tag: t.Tag, Phase: p.phase, StartTime: &start, CompletionTime: p.end.DeepCopy(),
				Version: p.version, ImageID: p.imageID, Message: p.message,
			})
			out.Desired++
			switch p.phase {
			case appsv1beta1.ImagePhaseSucceeded:
				out.Succeeded++
			case appsv1beta1.ImagePhaseFailed:
				out.Failed++
			default:
				out.Pulling++
			}
		}
		if len(tags) > 0 {
			if out.ImageStatuses == nil {
				out.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
			}
			out.ImageStatuses[repo] = appsv1beta1.ImageStatus{Tags: tags}
		}
	}
	switch {
	case s.written != nil && s.written.FirstSyncStatus != nil:
		out.FirstSyncStatus = s.written.FirstSyncStatus.DeepCopy()
	case out.Desired > 0:
		out.FirstSyncStatus = &appsv1beta1.SyncStatus{
			SyncAt:  seconds(r.clock.Now()),
			Status:  appsv1beta1.SyncStatusSucceeded,
			Message: "simulated kruise-daemon synced the NodeImage status",
		}
	}
	return out
}

// finishedResults are the Succeeded and Failed entries of a status, by tag.
func finishedResults(st *appsv1beta1.NodeImageStatus) map[pullKey]appsv1beta1.ImageTagStatus {
	out := map[pullKey]appsv1beta1.ImageTagStatus{}
	for repo, img := range st.ImageStatuses {
		for _, t := range img.Tags {
			if t.Phase == appsv1beta1.ImagePhaseSucceeded || t.Phase == appsv1beta1.ImagePhaseFailed {
				out[pullKey{repo, t.Tag}] = t
			}
		}
	}
	return out
}

func restored(st appsv1beta1.ImageTagStatus) *simPull {
	p := &simPull{version: st.Version, phase: st.Phase, end: st.CompletionTime.DeepCopy(), imageID: st.ImageID, message: st.Message}
	if st.StartTime != nil {
		p.start = *st.StartTime
	}
	if p.end == nil {
		// A finished result without an end: count it as ended when it started.
		p.end = p.start.DeepCopy()
	}
	return p
}

// seconds is t at the precision the API server keeps, so a status read back equals the one
// written.
func seconds(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

// imageID is a stable made-up runtime ID of repo:tag.
func imageID(k pullKey) string {
	sum := sha256.Sum256([]byte(k.repo + ":" + k.tag))
	return "sha256:" + hex.EncodeToString(sum[:])
}
