package imagepulljob

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// pullCopy is the pullsecrets controller's copy of testNS/name, naming the
// jobs (in testNS).
func pullCopy(name string, jobs ...string) *corev1.Secret {
	refs := ""
	for i, j := range jobs {
		if i > 0 {
			refs += ","
		}
		refs += testNS + "/" + j
	}
	return gen.Secret(pullsecrets.CopyName(testNS, name), gen.SetSecretNamespace(v1beta1.DaemonConfigNamespace),
		gen.SetSecretLabels(map[string]string{pullsecrets.ManagedByLabel: pullsecrets.ManagedByValue}),
		gen.SetSecretAnnotations(map[string]string{
			pullsecrets.SourceNamespaceAnnotation: testNS, pullsecrets.SourceNameAnnotation: name,
			pullsecrets.ReferencesAnnotation: refs,
		}),
		gen.SetSecretDockerConfigJSON("{}"))
}

// setCopy plays the pullsecrets controller: the copy now names jobs (none:
// deleted), and the copy informer's event is delivered.
func (f *fixture) setCopy(t *testing.T, name string, jobs ...string) {
	t.Helper()
	key := v1beta1.DaemonConfigNamespace + "/" + pullsecrets.CopyName(testNS, name)
	obj, exists, err := f.secrets.GetByKey(key)
	require.NoError(t, err)
	require.True(t, exists, key)
	old := obj.(*corev1.Secret)
	if len(jobs) == 0 {
		require.NoError(t, f.secrets.Delete(old))
		f.ctrl.copyDeleted(cache.DeletedFinalStateUnknown{Key: key, Obj: old})
		return
	}
	cur := pullCopy(name, jobs...)
	require.NoError(t, f.secrets.Update(cur))
	f.ctrl.copyUpdated(old, cur)
}

func (f *fixture) finalizers(t *testing.T, name string) []string {
	t.Helper()
	return f.job(t, name).Finalizers
}

// A running job naming pull secrets carries the protection finalizer; it
// keeps it after completing until its NodeImage entries and its copies are
// released, then loses it, as OpenKruise removes it at completion.
func TestProtectionFinalizerReleasedAfterCompletion(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobPullSecrets("regcred"))
	src := gen.Secret("regcred", gen.SetSecretNamespace(testNS), gen.SetSecretDockerConfigJSON("{}"))
	f := newFixture(t, objects{
		jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
		secrets: []*corev1.Secret{src, pullCopy("regcred", "j", "other")},
	})
	f.step(t, "j")
	assert.Equal(t, []string{v1beta1.ProtectionFinalizer}, f.finalizers(t, "j"), "added while running")
	assert.Equal(t, "0/1 nodes succeeded, 0 failed, 1 pulling", f.job(t, "j").Status.Message, "and the sync went on")

	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.step(t, "j")
	require.NotNil(t, f.job(t, "j").Status.CompletionTime)
	f.step(t, "j")
	assert.Empty(t, f.ni(t, "n1").Spec.Images, "withdrawn at completion")
	f.drainJobs()
	f.syncJob(t, "j")
	assert.Equal(t, []string{v1beta1.ProtectionFinalizer}, f.finalizers(t, "j"), "the copy still names the job")

	// Another job's start rewrites the copy: nothing released, nothing queued.
	f.setCopy(t, "regcred", "j", "other", "third")
	assert.Empty(t, f.drainJobs())
	// The pullsecrets controller releases the copy for the finished job.
	f.setCopy(t, "regcred", "other", "third")
	assert.Equal(t, map[string]bool{testNS + "/j": true}, f.drainJobs())
	f.syncJob(t, "j")
	assert.Empty(t, f.finalizers(t, "j"))
	assert.NotNil(t, f.job(t, "j").Status.CompletionTime)
}

// A running job deleted while its copy names it stays until the copy goes.
func TestProtectionFinalizerHoldsDeletion(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobPullSecrets("regcred", "regcred", ""),
		gen.SetImagePullJobCompletionType(v1beta1.Never))
	f := newFixture(t, objects{
		jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
		secrets: []*corev1.Secret{pullCopy("regcred", "j")},
	})
	f.step(t, "j")
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.step(t, "j")
	live := f.job(t, "j")
	require.Equal(t, []string{v1beta1.ProtectionFinalizer}, live.Finalizers)
	require.Nil(t, live.Status.CompletionTime, "a Never job does not complete")

	live.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	_, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Update(context.Background(), live, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	f.step(t, "j")
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
	f.drainJobs()
	f.syncJob(t, "j")
	assert.Equal(t, []string{v1beta1.ProtectionFinalizer}, f.finalizers(t, "j"), "held by the copy")

	f.setCopy(t, "regcred")
	assert.Equal(t, map[string]bool{testNS + "/j": true}, f.drainJobs(), "the copy's deletion queues the job")
	f.syncJob(t, "j")
	assert.Empty(t, f.finalizers(t, "j"))
}

// A job without pull secrets gets no finalizer: nothing of it outlives it
// without one.
func TestNoFinalizerWithoutPullSecrets(t *testing.T) {
	f := newFixture(t, objects{
		jobs:       []*v1beta1.ImagePullJob{newJob("j", image, gen.SetImagePullJobPullSecrets(""))},
		nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
	})
	f.step(t, "j")
	assert.Empty(t, f.finalizers(t, "j"))
	for _, a := range f.writes() {
		if a.GetResource().Resource == "imagepulljobs" {
			assert.Equal(t, "status", a.GetSubresource(), "only status writes to the job")
		}
	}
}

// Copy events queue only the jobs they concern.
func TestCopyHandlers(t *testing.T) {
	f := newFixture(t, objects{})
	a, b := pullCopy("regcred", "j1", "j2"), pullCopy("regcred", "j2")
	f.ctrl.copyUpdated(a, a)
	assert.Empty(t, f.drainJobs())
	f.ctrl.copyUpdated(a, b)
	assert.Equal(t, map[string]bool{testNS + "/j1": true}, f.drainJobs())
	f.ctrl.copyDeleted(a)
	assert.Equal(t, map[string]bool{testNS + "/j1": true, testNS + "/j2": true}, f.drainJobs())
	f.ctrl.copyDeleted(cache.DeletedFinalStateUnknown{Obj: b})
	assert.Equal(t, map[string]bool{testNS + "/j2": true}, f.drainJobs())

	elsewhere := a.DeepCopy()
	elsewhere.Namespace = testNS
	f.ctrl.copyUpdated(elsewhere, b)
	f.ctrl.copyDeleted(elsewhere)
	unlabelled := a.DeepCopy()
	unlabelled.Labels = nil
	f.ctrl.copyDeleted(unlabelled)
	f.ctrl.copyUpdated("junk", b)
	f.ctrl.copyDeleted(42)
	assert.Empty(t, f.drainJobs())
}

// The node sync that withdraws a deleting job's request queues the job at
// once, often before the NodeImage cache shows the write: the job then
// still looks named by the NodeImage. The cache's update event queues it
// again, and the finalizer goes.
func TestProtectionFinalizerReleasedWhenTheCacheShowsTheWithdrawal(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobPullSecrets("regcred"), gen.SetImagePullJobCompletionType(v1beta1.Never))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	require.Equal(t, []string{v1beta1.ProtectionFinalizer}, f.finalizers(t, "j"))
	live := f.job(t, "j")
	live.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	_, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Update(context.Background(), live, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	f.syncJob(t, "j") // withdraws: queues n1

	stale, err := f.ctrl.niLister.Get("n1")
	require.NoError(t, err)
	key, _ := f.ctrl.nodeQueue.Get()
	_, err = f.ctrl.syncNodeImage(ctx(t), key)
	f.ctrl.nodeQueue.Done(key)
	require.NoError(t, err)
	require.Empty(t, f.ni(t, "n1").Spec.Images, "withdrawn on the API server")
	require.True(t, f.drainJobs()[testNS+"/j"])
	_, err = f.ctrl.syncJob(ctx(t), testNS+"/j") // the cache still shows the request
	require.NoError(t, err)
	assert.Equal(t, []string{v1beta1.ProtectionFinalizer}, f.finalizers(t, "j"))

	f.refresh(t)
	cur, err := f.ctrl.niLister.Get("n1")
	require.NoError(t, err)
	cur = cur.DeepCopy()
	cur.Generation = stale.Generation + 1 // the API server's, for a spec change (not the fake's)
	f.ctrl.nodeImageUpdated(stale, cur)
	assert.True(t, f.drainJobs()[testNS+"/j"], "the cache's update queues the job whose request went")
	f.syncJob(t, "j")
	assert.Empty(t, f.finalizers(t, "j"))
}
