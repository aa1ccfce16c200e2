package pullsecrets

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	testNS     = "team"
	secretName = "regcred"
	secretKey  = testNS + "/" + secretName
	copyNS     = appsv1beta1.DaemonConfigNamespace
)

var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// source is a dockerconfigjson secret in testNS.
func source(name string, data string) *corev1.Secret {
	return gen.Secret(name, gen.SetSecretNamespace(testNS), gen.SetSecretUID(types.UID("src-"+name)), gen.SetSecretResourceVersion("5"),
		gen.SetSecretLabels(map[string]string{"app": "registry"}), gen.SetSecretDockerConfigJSON(data))
}

// copyOf is the controller's copy of src, referenced by the jobs named
// (in testNS; by default j1, as most tests have).
func copyOf(src *corev1.Secret, jobs ...string) *corev1.Secret {
	if len(jobs) == 0 {
		jobs = []string{"j1"}
	}
	refs := make([]string, len(jobs))
	for i, j := range jobs {
		refs[i] = testNS + "/" + j
	}
	return gen.Secret(CopyName(src.Namespace, src.Name), gen.SetSecretNamespace(copyNS), gen.SetSecretUID(types.UID("copy-"+src.Name)),
		gen.SetSecretResourceVersion("9"), gen.SetSecretLabels(map[string]string{ManagedByLabel: "true"}),
		gen.SetSecretAnnotations(map[string]string{
			SourceNamespaceAnnotation: src.Namespace,
			SourceNameAnnotation:      src.Name,
			SourceKeyAnnotation:       src.Namespace + "/" + src.Name,
			ReferencesAnnotation:      strings.Join(refs, ","),
		}),
		gen.SetSecretType(src.Type), gen.SetSecretData(src.Data))
}

// newJob is an unfinished job in testNS referencing the secrets.
func newJob(name string, secrets ...string) *appsv1beta1.ImagePullJob {
	return gen.ImagePullJob(name, gen.SetImagePullJobNamespace(testNS), gen.SetImagePullJobUID(types.UID("job-"+name)),
		gen.SetImagePullJobResourceVersion("1"), gen.SetImagePullJobImage("nginx:1.27"), gen.SetImagePullJobPullSecrets(secrets...),
		gen.SetImagePullJobStartTime(now))
}

// finishedJob is newJob, completed.
func finishedJob(name string, secrets ...string) *appsv1beta1.ImagePullJob {
	return gen.ImagePullJobFrom(newJob(name, secrets...), gen.SetImagePullJobCompletionTime(now))
}

// ---- fixture ----

type fixture struct {
	ctrl          *Controller
	kube          *fake.Clientset
	recorder      *record.FakeRecorder
	secretIndexer cache.Indexer
	daemonIndexer cache.Indexer
	jobIndexer    cache.Indexer
}

// objects: secrets (sources and copies) are in the API server and the
// caches; jobs are in the job cache only (they are never written).
type objects struct {
	secrets []*corev1.Secret
	jobs    []*appsv1beta1.ImagePullJob
	// separateDaemonInformer gives the copies their own, namespaced
	// informer, as Config.DaemonSecrets allows.
	separateDaemonInformer bool
}

func newFixture(t *testing.T, o objects) *fixture {
	t.Helper()
	var kubeObjs []runtime.Object
	for _, s := range o.secrets {
		kubeObjs = append(kubeObjs, s.DeepCopy())
	}
	f := &fixture{
		kube:     fake.NewClientset(kubeObjs...),
		recorder: record.NewFakeRecorder(50),
	}
	kruise := kruisefake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kfactory := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	cfg := Config{
		Config:  ctrlbase.Config{Client: f.kube, KruiseClient: kruise, Recorder: f.recorder, Clock: clocktesting.NewFakeClock(now)},
		Secrets: factory.Core().V1().Secrets(),
		Jobs:    kfactory.Apps().V1beta1().ImagePullJobs(),
	}
	f.secretIndexer = cfg.Secrets.Informer().GetIndexer()
	f.daemonIndexer = f.secretIndexer
	if o.separateDaemonInformer {
		cfg.DaemonSecrets = informers.NewSharedInformerFactoryWithOptions(f.kube, 0, informers.WithNamespace(copyNS)).Core().V1().Secrets()
		f.daemonIndexer = cfg.DaemonSecrets.Informer().GetIndexer()
	}
	ctrl, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	f.ctrl = ctrl
	f.jobIndexer = cfg.Jobs.Informer().GetIndexer()
	// The caches are filled by hand: no informer runs, nothing races.
	for _, s := range o.secrets {
		require.NoError(t, f.indexerFor(s).Add(s))
	}
	for _, j := range o.jobs {
		require.NoError(t, f.jobIndexer.Add(j))
	}
	f.kube.ClearActions()
	return f
}

// indexerFor is the cache that holds s.
func (f *fixture) indexerFor(s *corev1.Secret) cache.Indexer {
	if s.Namespace == copyNS {
		return f.daemonIndexer
	}
	return f.secretIndexer
}

func (f *fixture) syncKey(t *testing.T, key string) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, key)
	require.Zero(t, after, "nothing is looked at again on a timer")
	return err
}

func (f *fixture) mustSync(t *testing.T) {
	t.Helper()
	require.NoError(t, f.syncKey(t, secretKey))
}

// writes lists the client calls other than reads.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.kube.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

// verbs is the verbs of writes(), in order.
func (f *fixture) verbs() []string {
	var out []string
	for _, a := range f.writes() {
		out = append(out, a.GetVerb())
	}
	return out
}

// liveCopy reads the copy of testNS/name from the API server; nil when
// there is none.
func (f *fixture) liveCopy(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s, err := f.kube.CoreV1().Secrets(copyNS).Get(context.Background(), CopyName(testNS, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return s
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

// drain empties the queue and returns its keys in order.
func (f *fixture) drain() []string {
	var out []string
	for f.ctrl.queue.Len() > 0 {
		key, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(key)
		f.ctrl.queue.Forget(key)
		out = append(out, key)
	}
	return out
}

// liveSource reads testNS/secretName from the API server; nil when there is
// none.
func (f *fixture) liveSource(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := f.kube.CoreV1().Secrets(testNS).Get(context.Background(), secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return s
}
