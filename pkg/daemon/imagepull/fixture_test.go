package imagepull

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	node     = "node-a"
	wait     = 5 * time.Second
	tick     = time.Millisecond
	daemonNS = appsv1beta1.DaemonConfigNamespace
)

var tNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// behaviour is how the fake runtime answers the pulls of one image.
type behaviour struct {
	// errs answer the first calls, one each; a nil entry succeeds.
	errs []error
	// gate, when not nil, holds every pull until it is closed or the
	// pull's context ends.
	gate chan struct{}
}

// fakeImages is an in-memory Images that records what it is asked.
type fakeImages struct {
	mu        sync.Mutex
	present   map[string]string
	behave    map[string]*behaviour
	reqs      []cri.PullRequest
	statuses  []string
	cancelled []string
	active    int
	maxActive int
}

func newFakeImages() *fakeImages {
	return &fakeImages{present: map[string]string{}, behave: map[string]*behaviour{}}
}

func (f *fakeImages) set(image string, b *behaviour) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.behave[image] = b
}

func (f *fakeImages) PullImage(ctx context.Context, req cri.PullRequest) (string, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	b := f.behave[req.Image]
	var err error
	var gate chan struct{}
	if b != nil {
		gate = b.gate
		if len(b.errs) > 0 {
			err, b.errs = b.errs[0], b.errs[1:]
		}
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			f.mu.Lock()
			f.cancelled = append(f.cancelled, req.Image)
			f.mu.Unlock()
			return "", fmt.Errorf("CRI PullImage %s: %w", req.Image, ctx.Err())
		}
	}
	if err != nil {
		return "", err
	}
	id := "sha256:id-of-" + req.Image
	f.mu.Lock()
	f.present[req.Image] = id
	f.mu.Unlock()
	return id, nil
}

func (f *fakeImages) ImageStatus(_ context.Context, image string) (cri.ImageInfo, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = append(f.statuses, image)
	id, ok := f.present[image]
	if !ok {
		return cri.ImageInfo{}, false, nil
	}
	return cri.ImageInfo{ID: id, RepoTags: []string{image}}, true, nil
}

func (f *fakeImages) requests() []cri.PullRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cri.PullRequest(nil), f.reqs...)
}

func (f *fakeImages) pulled() []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.Image)
	}
	return out
}

func (f *fakeImages) calls() int { return len(f.requests()) }

func (f *fakeImages) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

// fakeKeyring answers every lookup with the same credentials and problems
// and records the secrets it was given.
type fakeKeyring struct {
	mu       sync.Mutex
	creds    []Credential
	problems []error
	secrets  [][]string
	// provider is what HasProvider answers.
	provider bool
}

func (k *fakeKeyring) HasProvider(string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.provider
}

func (k *fakeKeyring) Lookup(_ context.Context, _ string, secrets []*corev1.Secret) ([]Credential, []error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var names []string
	for _, s := range secrets {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	k.secrets = append(k.secrets, names)
	return append([]Credential(nil), k.creds...), append([]error(nil), k.problems...)
}

// lookups lists the secrets of each lookup, in order.
func (k *fakeKeyring) lookups() [][]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([][]string(nil), k.secrets...)
}

type fixture struct {
	t        *testing.T
	p        *Puller
	images   *fakeImages
	keyring  *fakeKeyring
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	metrics  *Metrics
	niInf    kruiseinformers.SharedInformerFactory
	secInf   informers.SharedInformerFactory
	ctx      context.Context
	stop     func()
}

// newFixture builds a puller for ni (may be nil) without starting it. The
// caches are filled by hand: no informer runs.
func newFixture(t *testing.T, ni *appsv1beta1.NodeImage, mut ...func(*Config)) *fixture {
	t.Helper()
	var objs []runtime.Object
	if ni != nil {
		objs = append(objs, ni)
	}
	f := &fixture{
		t:        t,
		images:   newFakeImages(),
		keyring:  &fakeKeyring{},
		kruise:   kruisefake.NewSimpleClientset(objs...),
		clock:    clocktesting.NewFakeClock(tNow),
		recorder: record.NewFakeRecorder(1000),
		metrics:  NewMetrics(),
	}
	f.niInf = kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	f.secInf = informers.NewSharedInformerFactoryWithOptions(kubefake.NewClientset(), 0, informers.WithNamespace(daemonNS))
	cfg := Config{
		KruiseClient: clientset.NewKruise(f.kruise),
		NodeName:     node,
		NodeImages:   f.niInf.Apps().V1beta1().NodeImages().Informer(),
		Secrets:      f.secInf.Core().V1().Secrets().Lister().Secrets(daemonNS),
		Images:       f.images,
		Keyring:      f.keyring,
		Metrics:      f.metrics,
		Recorder:     f.recorder,
		Clock:        f.clock,
		StatusQPS:    1000,
		StatusBurst:  1000,
		Backoff:      func(int) time.Duration { return 0 },
	}
	for _, m := range mut {
		m(&cfg)
	}
	p, err := New(cfg)
	require.NoError(t, err)
	f.p = p
	if ni != nil {
		require.NoError(t, f.niInf.Apps().V1beta1().NodeImages().Informer().GetIndexer().Add(ni.DeepCopy()))
	}
	return f
}

// start runs the puller until the test ends, logging to the test.
func (f *fixture) start() *fixture {
	_, ctx := ktesting.NewTestContext(f.t)
	return f.startWith(ctx)
}

// startLogging runs the puller until the test ends, logging to logger.
func (f *fixture) startLogging(logger klog.Logger) *fixture {
	return f.startWith(klog.NewContext(context.Background(), logger))
}

func (f *fixture) startWith(ctx context.Context) *fixture {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.p.Run(ctx)
	}()
	f.ctx = ctx
	f.stop = func() {
		cancel()
		<-done
	}
	f.t.Cleanup(f.stopOnce)
	return f
}

func (f *fixture) stopOnce() {
	if f.stop != nil {
		f.stop()
		f.stop = nil
	}
}

// nodeImage is the NodeImage as the API server holds it.
func (f *fixture) nodeImage() *appsv1beta1.NodeImage {
	ni, err := f.kruise.AppsV1beta1().NodeImages().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(f.t, err)
	return ni
}

// edit changes the spec on the server and shows the result to the puller,
// as the informer would.
func (f *fixture) edit(mut func(*appsv1beta1.NodeImageSpec)) {
	ni := f.nodeImage()
	mut(&ni.Spec)
	got, err := f.kruise.AppsV1beta1().NodeImages().Update(context.Background(), ni, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	require.NoError(f.t, f.niInf.Apps().V1beta1().NodeImages().Informer().GetIndexer().Update(got))
	f.p.nodeImageChanged(got)
}

func (f *fixture) addSecret(name string) {
	s := gen.Secret(name, gen.SetSecretNamespace(daemonNS))
	require.NoError(f.t, f.secInf.Core().V1().Secrets().Informer().GetIndexer().Add(s))
}

func (f *fixture) status() appsv1beta1.NodeImageStatus { return f.nodeImage().Status }

// tag is the status of repo:tag on the server (zero when absent).
func (f *fixture) tag(repo, tag string) appsv1beta1.ImageTagStatus {
	for _, t := range f.status().ImageStatuses[repo].Tags {
		if t.Tag == tag {
			return t
		}
	}
	return appsv1beta1.ImageTagStatus{}
}

// waitPhase waits until the server shows repo:tag in phase and returns it.
func (f *fixture) waitPhase(repo, tag string, phase appsv1beta1.ImagePullPhase) appsv1beta1.ImageTagStatus {
	f.t.Helper()
	require.Eventually(f.t, func() bool { return f.tag(repo, tag).Phase == phase },
		wait, tick, "%s:%s never %s; status %+v", repo, tag, phase, f.status())
	return f.tag(repo, tag)
}

// waitFor waits until cond holds.
func (f *fixture) waitFor(cond func() bool, msg string) {
	f.t.Helper()
	require.Eventually(f.t, cond, wait, tick, msg)
}

// stepUntil moves the clock by d per poll until cond holds.
func (f *fixture) stepUntil(d time.Duration, cond func() bool, msg string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		if cond() {
			return true
		}
		f.clock.Step(d)
		return false
	}, wait, 10*tick, msg)
}

// statusPatches counts the status writes.
func (f *fixture) statusPatches() int {
	n := 0
	for _, a := range f.kruise.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func (f *fixture) pulls(result string) float64 {
	var m dto.Metric
	require.NoError(f.t, f.metrics.pulls.WithLabelValues(result).Write(&m))
	return m.GetCounter().GetValue()
}

func (f *fixture) inFlight() float64 {
	var m dto.Metric
	require.NoError(f.t, f.metrics.inFlight.Write(&m))
	return m.GetGauge().GetValue()
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

// phases is the in-memory phase per "repo:tag".
func (f *fixture) phases() map[string]appsv1beta1.ImagePullPhase {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	out := map[string]appsv1beta1.ImagePullPhase{}
	for k, st := range f.p.tags {
		out[k.repo+":"+k.tag] = st.phase
	}
	return out
}

// tagSpec is a tag of version 1, created at tNow.
func tagSpec(tag string, mut ...func(*appsv1beta1.ImageTagSpec)) appsv1beta1.ImageTagSpec {
	created := metav1.NewTime(tNow)
	t := appsv1beta1.ImageTagSpec{Tag: tag, CreatedAt: &created, Version: 1, ImagePullPolicy: appsv1beta1.PullAlways}
	for _, m := range mut {
		m(&t)
	}
	return t
}

func ifNotPresent(t *appsv1beta1.ImageTagSpec) { t.ImagePullPolicy = appsv1beta1.PullIfNotPresent }

func withPolicy(timeout, backoffLimit int32, deadline int64) func(*appsv1beta1.ImageTagSpec) {
	return func(t *appsv1beta1.ImageTagSpec) {
		pp := &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: &timeout, BackoffLimit: &backoffLimit}
		if deadline > 0 {
			pp.ActiveDeadlineSeconds = &deadline
		}
		t.PullPolicy = pp
	}
}

func corev1ObjectRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: "default", Name: name}
}

// failOnce makes the first status write fail.
func failOnce(f *fixture) {
	var once sync.Once
	f.kruise.PrependReactor("patch", "nodeimages", func(k8stesting.Action) (bool, runtime.Object, error) {
		failed := false
		once.Do(func() { failed = true })
		if failed {
			return true, nil, apierrors.NewInternalError(errors.New("etcd timeout"))
		}
		return false, nil, nil
	})
}
