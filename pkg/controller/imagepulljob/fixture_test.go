package imagepulljob

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const testNS = "default"

var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// ---- builders ----

// newJob is a job in testNS pulling image, created an hour ago, changed by
// mods.
func newJob(name, image string, mods ...gen.ImagePullJobModifier) *v1beta1.ImagePullJob {
	return gen.ImagePullJob(name, append([]gen.ImagePullJobModifier{
		gen.SetImagePullJobNamespace(testNS), gen.SetImagePullJobUID(types.UID("uid-" + name)), gen.SetImagePullJobGeneration(1),
		gen.SetImagePullJobCreationTimestamp(now.Add(-time.Hour)), gen.SetImagePullJobImage(image),
	}, mods...)...)
}

// nodeImage is node name's NodeImage at resourceVersion 1, changed by mods.
func nodeImage(name string, mods ...gen.NodeImageModifier) *v1beta1.NodeImage {
	return gen.NodeImage(name, append([]gen.NodeImageModifier{gen.SetNodeImageResourceVersion("1")}, mods...)...)
}

// pod is a running pod in testNS on node ("": not scheduled), changed by
// mods.
func pod(name, node string, mods ...gen.PodModifier) *corev1.Pod {
	return gen.Pod(name, append([]gen.PodModifier{
		gen.SetPodNamespace(testNS), gen.SetPodNodeName(node), gen.SetPodPhase(corev1.PodRunning),
	}, mods...)...)
}

func jobRef(j *v1beta1.ImagePullJob) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: j.Namespace, Name: j.Name, UID: j.UID}
}

// ---- fixture ----

type fixture struct {
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	jobs     cache.Indexer
	nis      cache.Indexer
	pods     cache.Indexer
	secrets  cache.Indexer
	// nodeSkew is how far the nodes' clocks are from the controller's:
	// the daemon's dates in NodeImage status are skewed by it.
	nodeSkew time.Duration
}

type objects struct {
	jobs       []*v1beta1.ImagePullJob
	nodeImages []*v1beta1.NodeImage
	pods       []*corev1.Pod
	secrets    []*corev1.Secret
	// apiOnlyJobs exist on the API server but not (yet) in the cache.
	apiOnlyJobs []*v1beta1.ImagePullJob
	cfg         Config
}

func newFixture(t *testing.T, o objects) *fixture {
	t.Helper()
	var kubeObjs, kruiseObjs []runtime.Object
	for _, p := range o.pods {
		kubeObjs = append(kubeObjs, p.DeepCopy())
	}
	for _, s := range o.secrets {
		kubeObjs = append(kubeObjs, s.DeepCopy())
	}
	for _, j := range append(append([]*v1beta1.ImagePullJob{}, o.jobs...), o.apiOnlyJobs...) {
		kruiseObjs = append(kruiseObjs, j.DeepCopy())
	}
	for _, n := range o.nodeImages {
		kruiseObjs = append(kruiseObjs, n.DeepCopy())
	}
	f := &fixture{
		kube:     fake.NewClientset(kubeObjs...),
		kruise:   kruisefake.NewSimpleClientset(kruiseObjs...),
		clock:    clocktesting.NewFakeClock(now),
		recorder: record.NewFakeRecorder(100),
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	cfg := o.cfg
	cfg.Client, cfg.KruiseClient = f.kube, f.kruise
	cfg.Jobs = kf.Apps().V1beta1().ImagePullJobs()
	cfg.NodeImages = kf.Apps().V1beta1().NodeImages()
	cfg.Pods = factory.Core().V1().Pods()
	cfg.Secrets = factory.Core().V1().Secrets()
	cfg.Recorder, cfg.Clock = f.recorder, f.clock
	ctrl, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(ctrl.jobQueue.ShutDown)
	t.Cleanup(ctrl.nodeQueue.ShutDown)
	f.ctrl = ctrl
	f.jobs = cfg.Jobs.Informer().GetIndexer()
	f.nis = cfg.NodeImages.Informer().GetIndexer()
	f.pods = cfg.Pods.Informer().GetIndexer()
	f.secrets = cfg.Secrets.Informer().GetIndexer()
	for _, j := range o.jobs {
		require.NoError(t, f.jobs.Add(j.DeepCopy()))
	}
	for _, n := range o.nodeImages {
		require.NoError(t, f.nis.Add(n.DeepCopy()))
	}
	for _, p := range o.pods {
		require.NoError(t, f.pods.Add(p.DeepCopy()))
	}
	for _, s := range o.secrets {
		require.NoError(t, f.secrets.Add(s.DeepCopy()))
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
	return f
}

func ctx(t *testing.T) context.Context {
	_, c := ktesting.NewTestContext(t)
	return c
}

// syncJob syncs one job and then copies the API server's objects into the
// caches, as their watch events would.
func (f *fixture) syncJob(t *testing.T, name string) time.Duration {
	t.Helper()
	after, err := f.ctrl.syncJob(ctx(t), testNS+"/"+name)
	require.NoError(t, err)
	f.refresh(t)
	return after
}

// syncNodes syncs every queued NodeImage, then refreshes the caches.
func (f *fixture) syncNodes(t *testing.T) {
	t.Helper()
	for f.ctrl.nodeQueue.Len() > 0 {
		key, _ := f.ctrl.nodeQueue.Get()
		_, err := f.ctrl.syncNodeImage(ctx(t), key)
		f.ctrl.nodeQueue.Done(key)
		require.NoError(t, err)
	}
	f.refresh(t)
}

// drainJobs empties the job queue and returns the keys it held.
func (f *fixture) drainJobs() map[string]bool {
	out := map[string]bool{}
	for f.ctrl.jobQueue.Len() > 0 {
		key, _ := f.ctrl.jobQueue.Get()
		f.ctrl.jobQueue.Done(key)
		out[key] = true
	}
	return out
}

// step is syncJob of every named job then syncNodes.
func (f *fixture) step(t *testing.T, jobs ...string) {
	t.Helper()
	for _, j := range jobs {
		f.syncJob(t, j)
	}
	f.syncNodes(t)
}

func (f *fixture) refresh(t *testing.T) {
	t.Helper()
	c := context.Background()
	jl, err := f.kruise.AppsV1beta1().ImagePullJobs("").List(c, metav1.ListOptions{})
	require.NoError(t, err)
	var jobs []any
	for i := range jl.Items {
		jobs = append(jobs, &jl.Items[i])
	}
	require.NoError(t, f.jobs.Replace(jobs, ""))
	nl, err := f.kruise.AppsV1beta1().NodeImages().List(c, metav1.ListOptions{})
	require.NoError(t, err)
	var nis []any
	for i := range nl.Items {
		nis = append(nis, &nl.Items[i])
	}
	require.NoError(t, f.nis.Replace(nis, ""))
}

func (f *fixture) job(t *testing.T, name string) *v1beta1.ImagePullJob {
	t.Helper()
	j, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return j
}

func (f *fixture) ni(t *testing.T, name string) *v1beta1.NodeImage {
	t.Helper()
	n, err := f.kruise.AppsV1beta1().NodeImages().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// tagOn is the spec tag repo:tag on node, or nil.
func (f *fixture) tagOn(t *testing.T, node, repo, tag string) *v1beta1.ImageTagSpec {
	t.Helper()
	return f.ni(t, node).TagSpec(repo, tag)
}

// report plays the daemon: records phase for the current version of
// repo:tag on node, finished at the fake clock's time.
func (f *fixture) report(t *testing.T, node, repo, tag string, phase v1beta1.ImagePullPhase) {
	t.Helper()
	f.reportMessage(t, node, repo, tag, phase, "")
}

// reportMessage is report with the daemon's message. The NodeImage
// informer's update event is delivered, as the controller would see it.
func (f *fixture) reportMessage(t *testing.T, node, repo, tag string, phase v1beta1.ImagePullPhase, msg string) {
	t.Helper()
	cached, err := f.ctrl.niLister.Get(node)
	require.NoError(t, err)
	ni := f.ni(t, node)
	spec := ni.TagSpec(repo, tag)
	require.NotNil(t, spec, "no tag %s:%s on %s", repo, tag, node)
	if ni.Status.ImageStatuses == nil {
		ni.Status.ImageStatuses = map[string]v1beta1.ImageStatus{}
	}
	st := ni.Status.ImageStatuses[repo]
	var tags []v1beta1.ImageTagStatus
	for _, x := range st.Tags {
		if x.Tag != tag {
			tags = append(tags, x)
		}
	}
	nodeNow := metav1.NewTime(f.clock.Now().Add(f.nodeSkew))
	ts := v1beta1.ImageTagStatus{Tag: tag, Phase: phase, Version: spec.Version, Message: msg, StartTime: ptr.To(nodeNow)}
	if phase == v1beta1.ImagePhaseSucceeded || phase == v1beta1.ImagePhaseFailed {
		ts.CompletionTime = ptr.To(nodeNow)
	}
	st.Tags = append(tags, ts)
	ni.Status.ImageStatuses[repo] = st
	_, err = f.kruise.AppsV1beta1().NodeImages().UpdateStatus(context.Background(), ni, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	cur, err := f.ctrl.niLister.Get(node)
	require.NoError(t, err)
	f.ctrl.nodeImageUpdated(cached, cur)
}

// writes lists the kruise client's calls other than reads.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.kruise.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

// activeNodes lists the nodes where the job's tag is requested and has no
// result for its current version.
func (f *fixture) activeNodes(t *testing.T, job *v1beta1.ImagePullJob, repo, tag string) []string {
	t.Helper()
	var out []string
	nl, err := f.kruise.AppsV1beta1().NodeImages().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range nl.Items {
		ni := &nl.Items[i]
		e := ni.TagSpec(repo, tag)
		if e == nil || !hasOwner(e, job.UID) {
			continue
		}
		st := findStatus(ni, repo, tag, e.Version)
		if st == nil || (st.Phase != v1beta1.ImagePhaseSucceeded && st.Phase != v1beta1.ImagePhaseFailed) {
			out = append(out, ni.Name)
		}
	}
	return out
}
