// Package imagepull is the kruise-daemon side of NodeImage: it makes the
// node's container runtime pull the tags its own NodeImage lists and reports
// how each pull went in the NodeImage's status.
//
// The pieces follow the kubelet's image manager: the runtime (Images) and the
// credentials (Keyring) are small interfaces at the boundary; the policy of a
// tag (pull or not, retries, deadlines) lives in pull.go; the status is
// computed from in-memory state and written by one goroutine (status.go).
package imagepull

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	appslisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/imageref"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// Defaults of Config and of a tag's pull policy.
const (
	DefaultMaxConcurrentPulls = 2
	DefaultStatusQPS          = 5
	DefaultStatusBurst        = 10
	DefaultTimeoutSeconds     = 600
	DefaultBackoffLimit       = 3

	backoffBase = 2 * time.Second
	backoffMax  = 60 * time.Second
)

// Images is what the puller needs from the container runtime; cri.Runtime
// has it.
type Images interface {
	// PullImage pulls req.Image and returns the runtime's image ID. It runs
	// until ctx ends.
	PullImage(ctx context.Context, req cri.PullRequest) (string, error)
	// ImageStatus reports whether image is present, and its ID if so.
	ImageStatus(ctx context.Context, image string) (cri.ImageInfo, bool, error)
}

// Credential is one set of registry credentials to try for a pull.
type Credential struct {
	// Auth is sent with the pull. It holds secrets: never log it.
	Auth cri.Auth
	// Source says where the credential came from (e.g. "secret
	// kruise-daemon-config/foo"), for logs. It must hold no secret.
	Source string
}

// Keyring finds the credentials matching an image.
type Keyring interface {
	// Lookup returns the credentials of secrets (and of any node-wide
	// source) that match image, in the order to try them, and the problems
	// met on the way (e.g. a secret that cannot be parsed). The problems
	// must hold no credential values.
	Lookup(ctx context.Context, image string, secrets []*corev1.Secret) (creds []Credential, problems []error)
	// HasProvider reports whether a node-wide source whose answer may
	// change from one attempt to the next (a credential-provider plugin)
	// applies to image.
	HasProvider(image string) bool
}

// Config is what a Puller is built from.
type Config struct {
	KruiseClient kube.NodeImageGetter
	// NodeName is the node this daemon runs on, the name of its NodeImage.
	NodeName string
	// NodeImages is an informer of *NodeImage limited by the caller to
	// metadata.name=NodeName. New adds an event handler to it; the caller
	// starts it. A plain SharedIndexInformer, not the generated informer
	// type, whose package would link the all-groups clientsets into
	// kruise-daemon (see pkg/daemon/kube).
	NodeImages cache.SharedIndexInformer
	// Secrets lists the pull secrets of DaemonConfigNamespace.
	Secrets corelisters.SecretNamespaceLister
	Images  Images
	Keyring Keyring
	// MaxConcurrentPulls bounds the PullImage calls under way at once;
	// zero is DefaultMaxConcurrentPulls.
	MaxConcurrentPulls int
	Metrics            *Metrics
	// Recorder records Events on the NodeImage.
	Recorder recorder.EventRecorder
	// Clock reads the time and times timeouts, deadlines, backoffs and the
	// status rate limit; nil is the real clock.
	Clock clock.WithTicker
	// StatusQPS and StatusBurst rate limit the status writes (a token
	// bucket); zero is DefaultStatusQPS and DefaultStatusBurst.
	StatusQPS   float64
	StatusBurst int
	// Backoff is the wait before retry n (1, 2, ...) of a failed pull; nil
	// is 2 s doubling per retry, at most 60 s.
	Backoff func(retry int) time.Duration
}

// Puller pulls the tags of its node's NodeImage.
type Puller struct {
	client   kube.NodeImageGetter
	nodeName string
	lister   nodeImageGetter
	secrets  corelisters.SecretNamespaceLister
	images   Images
	keyring  Keyring
	metrics  *Metrics
	recorder recorder.EventRecorder
	clock    clock.WithTicker
	backoff  func(retry int) time.Duration
	limiter  *rate.Limiter

	// slots holds a token per PullImage under way.
	slots chan struct{}
	// specCh and statusCh wake the sync loop and the status writer; each
	// holds at most one pending wake-up so bursts coalesce.
	specCh   chan struct{}
	statusCh chan struct{}

	mu sync.Mutex
	// obj is the NodeImage as last seen, nil when there is none.
	obj *appsv1beta1.NodeImage
	// restored is set once the status found on the first NodeImage seen
	// has been taken over.
	restored bool
	tags     map[tagKey]*tagState
	// written is the status the server holds as far as we know: the last
	// one written or observed.
	written *appsv1beta1.NodeImageStatus
	// echoRV is the resourceVersion our last write produced; until the
	// informer shows it, the statuses it shows are older than ours.
	echoRV   string
	echoSeen bool

	wg sync.WaitGroup
}

type nodeImageGetter interface {
	Get(name string) (*appsv1beta1.NodeImage, error)
}

// tagKey names one tag of one image.
type tagKey struct{ repo, tag string }

// tagState is the in-memory state of one tag's pull, for one version.
type tagState struct {
	key     tagKey
	version int64
	phase   appsv1beta1.ImagePullPhase
	start   *metav1.Time
	end     *metav1.Time
	imageID string
	message string
	// cancel stops the pull goroutine; nil once it is finished.
	cancel context.CancelFunc
	// detached is set when the spec no longer wants this state: the pull
	// goroutine's updates are then ignored.
	detached bool
}

func (s *tagState) final() bool {
	return s.phase == appsv1beta1.ImagePhaseSucceeded || s.phase == appsv1beta1.ImagePhaseFailed
}

// New builds the puller and registers its event handler on the NodeImage
// informer.
func New(cfg Config) (*Puller, error) {
	if cfg.KruiseClient == nil || cfg.NodeName == "" || cfg.NodeImages == nil || cfg.Secrets == nil ||
		cfg.Images == nil || cfg.Keyring == nil || cfg.Metrics == nil || cfg.Recorder == nil {
		return nil, errors.New("imagepull: KruiseClient, NodeName, NodeImages, Secrets, Images, Keyring, Metrics and Recorder are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	n := cfg.MaxConcurrentPulls
	if n <= 0 {
		n = DefaultMaxConcurrentPulls
	}
	qps, burst := cfg.StatusQPS, cfg.StatusBurst
	if qps <= 0 {
		qps = DefaultStatusQPS
	}
	if burst <= 0 {
		burst = DefaultStatusBurst
	}
	backoff := cfg.Backoff
	if backoff == nil {
		backoff = DefaultBackoff
	}
	p := &Puller{
		client:   cfg.KruiseClient,
		nodeName: cfg.NodeName,
		lister:   appslisters.NewNodeImageLister(cfg.NodeImages.GetIndexer()),
		secrets:  cfg.Secrets,
		images:   cfg.Images,
		keyring:  cfg.Keyring,
		metrics:  cfg.Metrics,
		recorder: cfg.Recorder,
		clock:    clk,
		backoff:  backoff,
		limiter:  rate.NewLimiter(rate.Limit(qps), burst),
		slots:    make(chan struct{}, n),
		specCh:   make(chan struct{}, 1),
		statusCh: make(chan struct{}, 1),
		tags:     map[tagKey]*tagState{},
	}
	if _, err := cfg.NodeImages.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.nodeImageChanged,
		UpdateFunc: func(_, cur any) { p.nodeImageChanged(cur) },
		DeleteFunc: p.nodeImageChanged,
	}); err != nil {
		return nil, fmt.Errorf("adding NodeImage event handler: %w", err)
	}
	// Whatever the informer already holds is looked at when Run starts.
	p.specChanged()
	return p, nil
}

// DefaultBackoff is 2 s before the first retry, doubling, at most 60 s.
func DefaultBackoff(retry int) time.Duration {
	d := backoffBase
	for i := 1; i < retry && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

func (p *Puller) nodeImageChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if ni, ok := obj.(*appsv1beta1.NodeImage); ok && ni.Name != p.nodeName {
		return
	}
	p.specChanged()
}

func (p *Puller) specChanged() {
	select {
	case p.specCh <- struct{}{}:
	default:
	}
}

func (p *Puller) statusChanged() {
	select {
	case p.statusCh <- struct{}{}:
	default:
	}
}

// Run pulls until ctx ends, then cancels the pulls under way and returns
// once every goroutine it started has ended. The NodeImage informer should
// be synced: the status found on the first NodeImage seen is taken over.
func (p *Puller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("node", p.nodeName)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Started image puller", "maxConcurrentPulls", cap(p.slots))

	p.wg.Go(func() { p.writeLoop(ctx) })
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			for _, st := range p.tags {
				if st.cancel != nil {
					st.cancel()
				}
			}
			p.mu.Unlock()
			p.wg.Wait()
			logger.Info("Stopped image puller")
			return nil
		case <-p.specCh:
			p.sync(ctx)
		}
	}
}

// sync brings the in-memory tags in line with the NodeImage's spec: new
// tags and new versions start, removed ones are cancelled and dropped.
func (p *Puller) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	obj, err := p.lister.Get(p.nodeName)
	if err != nil {
		obj = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.obj = obj
	if obj == nil {
		for k, st := range p.tags {
			p.dropLocked(st)
			delete(p.tags, k)
		}
		// A NodeImage created again starts from its own status.
		p.restored = false
		p.written, p.echoRV, p.echoSeen = nil, "", false
		return
	}
	var restore map[tagKey]appsv1beta1.ImageTagStatus
	if !p.restored {
		p.restored = true
		restore = finishedTags(&obj.Status)
		p.written = obj.Status.DeepCopy()
		p.echoSeen = true
		if len(restore) > 0 {
			logger.V(2).Info("Took over finished pulls from the NodeImage status", "tags", len(restore))
		}
	} else {
		p.observeLocked(obj)
	}

	wanted := map[tagKey]bool{}
	for repo, img := range obj.Spec.Images {
		for _, t := range img.Tags {
			k := tagKey{repo, t.Tag}
			if wanted[k] {
				continue
			}
			wanted[k] = true
			st := p.tags[k]
			if st != nil && st.version == t.Version {
				continue
			}
			if st != nil {
				logger.V(2).Info("Tag version changed; pulling again", "image", repo, "tag", t.Tag, "oldVersion", st.version, "version", t.Version)
				p.dropLocked(st)
			}
			if prev, ok := restore[k]; ok && prev.Version == t.Version {
				p.tags[k] = &tagState{
					key: k, version: t.Version, phase: prev.Phase, start: prev.StartTime,
					end: prev.CompletionTime, imageID: prev.ImageID, message: prev.Message,
				}
				continue
			}
			p.startLocked(ctx, k, t, startedHere(&obj.Status, k, t.Version))
		}
	}
	for k, st := range p.tags {
		if !wanted[k] {
			logger.V(2).Info("Tag removed from the NodeImage", "image", k.repo, "tag", k.tag, "version", st.version)
			p.dropLocked(st)
			delete(p.tags, k)
		}
	}
	p.statusChanged()
}

// finishedTags are the Succeeded and Failed entries of a status.
func finishedTags(s *appsv1beta1.NodeImageStatus) map[tagKey]appsv1beta1.ImageTagStatus {
	out := map[tagKey]appsv1beta1.ImageTagStatus{}
	for repo, img := range s.ImageStatuses {
		for _, t := range img.Tags {
			if t.Phase == appsv1beta1.ImagePhaseSucceeded || t.Phase == appsv1beta1.ImagePhaseFailed {
				out[tagKey{repo, t.Tag}] = t
			}
		}
	}
	return out
}

// dropLocked cancels the pull of st, whose state is no longer wanted.
func (p *Puller) dropLocked(st *tagState) {
	st.detached = true
	if st.cancel != nil {
		st.cancel()
		st.cancel = nil
	}
}

// startedHere is when a daemon on this node began the pull of this version
// of the tag, as its status says (zero when it has not): written with this
// node's clock, unlike the spec's createdAt, which is the controller's.
func startedHere(s *appsv1beta1.NodeImageStatus, k tagKey, version int64) time.Time {
	img, ok := s.ImageStatuses[k.repo]
	if !ok {
		return time.Time{}
	}
	for _, t := range img.Tags {
		if t.Tag == k.tag && t.Version == version && t.StartTime != nil {
			return t.StartTime.Time
		}
	}
	return time.Time{}
}

// startLocked adds a Waiting state for the tag and starts its pull. since
// is when a daemon on this node began it before (zero: now).
func (p *Puller) startLocked(ctx context.Context, k tagKey, t appsv1beta1.ImageTagSpec, since time.Time) {
	req := newRequest(k, t)
	req.since = since
	if req.since.IsZero() {
		req.since = p.clock.Now()
	}
	pctx, cancel := context.WithCancel(ctx)
	st := &tagState{key: k, version: t.Version, phase: appsv1beta1.ImagePhaseWaiting, cancel: cancel}
	p.tags[k] = st
	p.wg.Go(func() {
		defer cancel()
		p.pullTag(pctx, st, req)
	})
}

// request is what one tag's pull needs from its spec, without API objects.
type request struct {
	key      tagKey
	image    string
	version  int64
	always   bool
	timeout  time.Duration
	retries  int
	deadline time.Duration // zero: none
	// since is when this node began the pull, on its own clock: the
	// deadline counts from it. The spec's createdAt is the controller's
	// clock; against this node's, a skew between the two would move the
	// deadline by as much.
	since time.Time
}

func newRequest(k tagKey, t appsv1beta1.ImageTagSpec) request {
	r := request{
		key:     k,
		image:   imageref.Join(k.repo, k.tag),
		version: t.Version,
		// An empty policy comes from controllers older than the field,
		// which always pulled.
		always:  t.ImagePullPolicy != appsv1beta1.PullIfNotPresent,
		timeout: DefaultTimeoutSeconds * time.Second,
		retries: DefaultBackoffLimit,
	}
	if pp := t.PullPolicy; pp != nil {
		if pp.TimeoutSeconds != nil && *pp.TimeoutSeconds > 0 {
			r.timeout = time.Duration(*pp.TimeoutSeconds) * time.Second
		}
		if pp.BackoffLimit != nil && *pp.BackoffLimit >= 0 {
			r.retries = int(*pp.BackoffLimit)
		}
		if pp.ActiveDeadlineSeconds != nil && *pp.ActiveDeadlineSeconds > 0 {
			r.deadline = durations.Seconds(*pp.ActiveDeadlineSeconds)
		}
	}
	return r
}

// imageSpec is the current pull secrets and sandbox metadata of repo; they
// may change without a version bump, so every attempt reads them again.
func (p *Puller) imageSpec(repo string) (secrets []appsv1beta1.ReferenceObject, labels, annotations map[string]string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.obj == nil {
		return nil, nil, nil, false
	}
	img, ok := p.obj.Spec.Images[repo]
	if !ok {
		return nil, nil, nil, false
	}
	secrets = append(secrets, img.PullSecrets...)
	annotations = map[string]string{}
	if sc := img.SandboxConfig; sc != nil {
		if len(sc.Labels) > 0 {
			labels = make(map[string]string, len(sc.Labels))
			for k, v := range sc.Labels {
				labels[k] = v
			}
		}
		for k, v := range sc.Annotations {
			annotations[k] = v
		}
	}
	annotations[appsv1beta1.PullingImageByAnnotation] = appsv1beta1.PullingImageByValue
	return secrets, labels, annotations, true
}

// update changes st under the lock unless it was detached, and wakes the
// status writer.
func (p *Puller) update(st *tagState, change func(*tagState)) bool {
	p.mu.Lock()
	if st.detached {
		p.mu.Unlock()
		return false
	}
	change(st)
	p.mu.Unlock()
	p.statusChanged()
	return true
}

// now is the clock's time at the precision the API server keeps, so a
// status read back compares equal to the one written.
func (p *Puller) now() *metav1.Time {
	t := metav1.NewTime(p.clock.Now().Truncate(time.Second))
	return &t
}

// event records an Event on the NodeImage, when there is one.
func (p *Puller) event(eventType, reason, messageFmt string, args ...any) {
	p.mu.Lock()
	obj := p.obj
	p.mu.Unlock()
	if obj != nil {
		p.recorder.Eventf(obj, eventType, reason, messageFmt, args...)
	}
}
