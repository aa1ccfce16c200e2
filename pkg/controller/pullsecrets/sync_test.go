package pullsecrets

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

const dockerCfg = `{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`

func TestCopyRef(t *testing.T) {
	assert.Equal(t, appsv1beta1.ReferenceObject{Namespace: "kruise-daemon-config", Name: "team.regcred"}, CopyRef(testNS, secretName))
	long := strings.Repeat("x", 250)
	ref := CopyRef(testNS, long)
	assert.Equal(t, CopyName(testNS, long), ref.Name)
	assert.LessOrEqual(t, len(ref.Name), 253)
}

func TestSyncCreatesCopy(t *testing.T) {
	for _, separate := range []bool{false, true} {
		t.Run(map[bool]string{false: "one secret informer", true: "separate copy informer"}[separate], func(t *testing.T) {
			f := newFixture(t, objects{
				secrets:                []*corev1.Secret{source(secretName, dockerCfg)},
				jobs:                   []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
				separateDaemonInformer: separate,
			})
			f.mustSync(t)

			require.Equal(t, []string{"create"}, f.verbs())
			assert.Equal(t, copyNS, f.writes()[0].GetNamespace())
			cp := f.liveCopy(t, secretName)
			require.NotNil(t, cp)
			assert.Equal(t, "team.regcred", cp.Name)
			assert.Equal(t, CopyRef(testNS, secretName).Name, cp.Name)
			assert.Equal(t, corev1.SecretTypeDockerConfigJson, cp.Type)
			assert.Equal(t, map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerCfg)}, cp.Data)
			assert.Equal(t, map[string]string{ManagedByLabel: "true"}, cp.Labels, "the source's labels are not copied")
			assert.Equal(t, map[string]string{
				SourceNamespaceAnnotation: testNS, SourceNameAnnotation: secretName,
				// OpenKruise's, for its tooling.
				"imagepulljobs.kruise.io/source-key": "team/regcred",
				"imagepulljobs.kruise.io/references": "team/j1",
			}, cp.Annotations)
			assert.Empty(t, f.events())
		})
	}
}

func TestSyncUnchangedNoWrite(t *testing.T) {
	src := source(secretName, dockerCfg)
	f := newFixture(t, objects{
		secrets: []*corev1.Secret{src, copyOf(src)},
		jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
	})
	f.mustSync(t)
	assert.Empty(t, f.writes())
	assert.Empty(t, f.events())
}

func TestSyncSourceUpdated(t *testing.T) {
	src := source(secretName, dockerCfg)
	cp := copyOf(src)
	cp.Annotations["note"] = "kept"
	updated := src.DeepCopy()
	updated.Data = map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`), "extra": []byte("x")}
	f := newFixture(t, objects{
		secrets: []*corev1.Secret{updated, cp},
		jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
	})
	f.mustSync(t)

	require.Equal(t, []string{"update"}, f.verbs())
	upd := f.writes()[0].(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
	assert.Equal(t, "9", upd.ResourceVersion, "optimistic: the cached version")
	live := f.liveCopy(t, secretName)
	assert.Equal(t, updated.Data, live.Data)
	assert.Equal(t, cp.Labels, live.Labels)
	assert.Equal(t, "kept", live.Annotations["note"])
	assert.Equal(t, secretName, live.Annotations[SourceNameAnnotation])
}

func TestSyncSourceTypeChanged(t *testing.T) {
	src := source(secretName, dockerCfg)
	cp := copyOf(src)
	changed := src.DeepCopy()
	changed.Type = corev1.SecretTypeDockercfg
	changed.Data = map[string][]byte{corev1.DockerConfigKey: []byte(`{}`)}
	f := newFixture(t, objects{
		secrets: []*corev1.Secret{changed, cp},
		jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
	})
	f.mustSync(t)
	assert.Equal(t, []string{"delete", "create"}, f.verbs(), "a secret's type cannot be updated")
	live := f.liveCopy(t, secretName)
	require.NotNil(t, live)
	assert.Equal(t, corev1.SecretTypeDockercfg, live.Type)
	assert.Equal(t, changed.Data, live.Data)
}

func TestSyncSharedSecret(t *testing.T) {
	src := source(secretName, dockerCfg)
	j1 := newJob("j1", secretName, "other")
	j2 := newJob("j2", secretName)
	f := newFixture(t, objects{secrets: []*corev1.Secret{src, copyOf(src, "j1", "j2")}, jobs: []*appsv1beta1.ImagePullJob{j1, j2}})
	f.mustSync(t)
	assert.Empty(t, f.writes(), "the copy names both jobs already")

	// One finishes: the other still needs the copy, which now names it alone.
	require.NoError(t, f.jobIndexer.Update(finishedJob("j1", secretName, "other")))
	f.mustSync(t)
	assert.Equal(t, []string{"update"}, f.verbs())
	live := f.liveCopy(t, secretName)
	require.NotNil(t, live)
	assert.Equal(t, "team/j2", live.Annotations[ReferencesAnnotation])
	require.NoError(t, f.indexerFor(live).Update(live))
	f.kube.ClearActions()

	// Both finished: deleted.
	require.NoError(t, f.jobIndexer.Update(finishedJob("j2", secretName)))
	f.mustSync(t)
	require.Equal(t, []string{"delete"}, f.verbs())
	del := f.writes()[0].(k8stesting.DeleteAction)
	assert.Equal(t, copyNS, del.GetNamespace())
	assert.Equal(t, ptr.To(copyOf(src).UID), del.GetDeleteOptions().Preconditions.UID)
	assert.Nil(t, f.liveCopy(t, secretName))
	assert.NotNil(t, f.liveSource(t), "the source is never touched")
}

func TestSyncJobDeleted(t *testing.T) {
	src := source(secretName, dockerCfg)
	job := newJob("j1", secretName)
	f := newFixture(t, objects{secrets: []*corev1.Secret{src, copyOf(src)}, jobs: []*appsv1beta1.ImagePullJob{job}})
	require.NoError(t, f.jobIndexer.Delete(job))
	f.mustSync(t)
	assert.Equal(t, []string{"delete"}, f.verbs())
	assert.Nil(t, f.liveCopy(t, secretName))
}

// A job being deleted (held by the protection finalizer, not yet completed)
// releases its copies at once: the finalizer waits for exactly that.
func TestSyncDeletingJobReleasesCopy(t *testing.T) {
	src := source(secretName, dockerCfg)
	j1, j2 := newJob("j1", secretName), newJob("j2", secretName)
	f := newFixture(t, objects{secrets: []*corev1.Secret{src, copyOf(src, "j1", "j2")}, jobs: []*appsv1beta1.ImagePullJob{j1, j2}})

	deleting := func(j *appsv1beta1.ImagePullJob) *appsv1beta1.ImagePullJob {
		d := j.DeepCopy()
		d.DeletionTimestamp = ptr.To(metav1.NewTime(now))
		d.Finalizers = []string{appsv1beta1.ProtectionFinalizer}
		return d
	}
	require.NoError(t, f.jobIndexer.Update(deleting(j1)))
	f.mustSync(t)
	assert.Equal(t, []string{"update"}, f.verbs())
	live := f.liveCopy(t, secretName)
	require.NotNil(t, live)
	assert.Equal(t, "team/j2", live.Annotations[ReferencesAnnotation], "the deleting job is no longer named")
	assert.Equal(t, []string{"team/j2"}, ReferencedJobs(live))
	require.NoError(t, f.indexerFor(live).Update(live))
	f.kube.ClearActions()

	require.NoError(t, f.jobIndexer.Update(deleting(j2)))
	f.mustSync(t)
	assert.Equal(t, []string{"delete"}, f.verbs())
	assert.Nil(t, f.liveCopy(t, secretName))
}

func TestReferencedJobs(t *testing.T) {
	src := source(secretName, dockerCfg)
	assert.Equal(t, []string{"team/a", "team/b"}, ReferencedJobs(copyOf(src, "a", "b")))
	assert.Nil(t, ReferencedJobs(src), "not a copy")
	none := copyOf(src)
	none.Annotations[ReferencesAnnotation] = ""
	assert.Nil(t, ReferencedJobs(none))
}

func TestSyncFinishedJobOnlyNoCopy(t *testing.T) {
	f := newFixture(t, objects{
		secrets: []*corev1.Secret{source(secretName, dockerCfg)},
		jobs:    []*appsv1beta1.ImagePullJob{finishedJob("j1", secretName)},
	})
	f.mustSync(t)
	assert.Empty(t, f.writes())
	assert.Nil(t, f.liveCopy(t, secretName))
}

func TestSyncSourceDeleted(t *testing.T) {
	src := source(secretName, dockerCfg)
	f := newFixture(t, objects{secrets: []*corev1.Secret{src, copyOf(src)}, jobs: []*appsv1beta1.ImagePullJob{newJob("j1", secretName)}})
	require.NoError(t, f.secretIndexer.Delete(src))
	f.mustSync(t)
	assert.Equal(t, []string{"delete"}, f.verbs())
	assert.Nil(t, f.liveCopy(t, secretName))
	events := f.events()
	require.Len(t, events, 1)
	assert.Equal(t, "Warning "+ReasonPullSecretNotFound+" Pull secret regcred not found in namespace team: pulls go ahead without it; a registry that needs it refuses them, and the failure names it", events[0])
}

func TestSyncMissingSource(t *testing.T) {
	f := newFixture(t, objects{jobs: []*appsv1beta1.ImagePullJob{
		newJob("j1", secretName),
		newJob("j2", secretName),
		finishedJob("done", secretName),
	}})
	f.mustSync(t)
	assert.Empty(t, f.writes(), "no copy")
	events := f.events()
	assert.Len(t, events, 2, "one per unfinished job")
	for _, e := range events {
		assert.True(t, strings.HasPrefix(e, "Warning "+ReasonPullSecretNotFound+" "), e)
	}

	f.mustSync(t)
	assert.Empty(t, f.events(), "once per job per process")

	// A job deleted and created again under the same name is a new job.
	j1 := newJob("j1", secretName)
	f.ctrl.jobDeleted(cache.DeletedFinalStateUnknown{Key: testNS + "/j1", Obj: j1})
	f.drain()
	f.mustSync(t)
	assert.Len(t, f.events(), 1)
}

func TestSyncLongName(t *testing.T) {
	long := strings.Repeat("n", 250)
	src := source(long, dockerCfg)
	f := newFixture(t, objects{secrets: []*corev1.Secret{src}, jobs: []*appsv1beta1.ImagePullJob{newJob("j1", long)}})
	require.NoError(t, f.syncKey(t, testNS+"/"+long))
	cp := f.liveCopy(t, long)
	require.NotNil(t, cp)
	assert.LessOrEqual(t, len(cp.Name), 253)
	assert.True(t, strings.HasPrefix(cp.Name, testNS+"."), cp.Name)
	assert.NotContains(t, cp.Name, long, "hashed")
	assert.Len(t, cp.Name, len(testNS)+1+32)
	assert.Equal(t, long, cp.Annotations[SourceNameAnnotation], "the full name is in the annotation")
	// Another long name gets another copy.
	assert.NotEqual(t, cp.Name, CopyName(testNS, strings.Repeat("m", 250)))
}

func TestSyncCopyNameTaken(t *testing.T) {
	src := source(secretName, dockerCfg)
	for name, mut := range map[string]func(*corev1.Secret){
		"not labelled":           func(s *corev1.Secret) { delete(s.Labels, ManagedByLabel) },
		"copy of another secret": func(s *corev1.Secret) { s.Annotations[SourceNameAnnotation] = "else" },
	} {
		t.Run(name, func(t *testing.T) {
			taken := copyOf(src)
			taken.Data = map[string][]byte{"mine": []byte("1")}
			mut(taken)
			f := newFixture(t, objects{secrets: []*corev1.Secret{src, taken}, jobs: []*appsv1beta1.ImagePullJob{newJob("j1", secretName)}})
			f.mustSync(t)
			assert.Empty(t, f.writes(), "left alone")
			events := f.events()
			require.Len(t, events, 1)
			assert.Contains(t, events[0], "Warning "+ReasonCopyConflict)

			// Not even deleted when nothing references the source.
			require.NoError(t, f.jobIndexer.Delete(newJob("j1", secretName)))
			f.mustSync(t)
			assert.Empty(t, f.writes())
			assert.Empty(t, f.events())
		})
	}
}

func TestSyncNamespaceMissing(t *testing.T) {
	f := newFixture(t, objects{
		secrets: []*corev1.Secret{source(secretName, dockerCfg)},
		jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
	})
	f.kube.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, copyNS)
	})
	err := f.syncKey(t, secretKey)
	require.Error(t, err, "retried with backoff until the namespace exists")
	assert.Contains(t, err.Error(), "creating secret kruise-daemon-config/team.regcred")
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonNamespaceMissing+" Namespace kruise-daemon-config")
	require.Error(t, f.syncKey(t, secretKey))
	assert.Empty(t, f.events(), "reported once")
}

func TestSyncCreateErrors(t *testing.T) {
	t.Run("already exists: the cache catches up", func(t *testing.T) {
		f := newFixture(t, objects{
			secrets: []*corev1.Secret{source(secretName, dockerCfg)},
			jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
		})
		f.kube.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, "team.regcred")
		})
		f.mustSync(t)
		assert.Empty(t, f.events())
	})
	t.Run("other errors are returned", func(t *testing.T) {
		f := newFixture(t, objects{
			secrets: []*corev1.Secret{source(secretName, dockerCfg)},
			jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
		})
		f.kube.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New("etcd"))
		})
		require.Error(t, f.syncKey(t, secretKey))
		assert.Empty(t, f.events())
	})
}

func TestSyncBadKeys(t *testing.T) {
	f := newFixture(t, objects{})
	for _, key := range []string{"", "no-namespace", "a/b/c", "/x", "x/"} {
		require.NoError(t, f.syncKey(t, key), key)
	}
	assert.Empty(t, f.kube.Actions())
}

func TestSyncSourceIsACopy(t *testing.T) {
	// A job in the copies' namespace naming one of the copies.
	src := source(secretName, dockerCfg)
	cp := copyOf(src)
	job := newJob("j1", cp.Name)
	job.Namespace = copyNS
	f := newFixture(t, objects{secrets: []*corev1.Secret{src, cp}, jobs: []*appsv1beta1.ImagePullJob{job}})
	require.NoError(t, f.syncKey(t, copyNS+"/"+cp.Name))
	assert.Empty(t, f.writes(), "no copy of a copy")
}

// ---- event handlers ----

func TestJobHandlers(t *testing.T) {
	f := newFixture(t, objects{})
	job := newJob("j1", secretName, "b", secretName, "")
	f.ctrl.jobAdded(job)
	assert.Equal(t, []string{secretKey, testNS + "/b"}, f.drain(), "each referenced secret once, empty names skipped")

	progress := job.DeepCopy()
	progress.Status.Active = 3
	progress.Status.Succeeded = 2
	progress.ResourceVersion = "2"
	f.ctrl.jobUpdated(job, progress)
	assert.Empty(t, f.drain(), "status progress is ignored")

	done := job.DeepCopy()
	done.Status.CompletionTime = done.Status.StartTime
	f.ctrl.jobUpdated(job, done)
	assert.Equal(t, []string{secretKey, testNS + "/b"}, f.drain(), "finishing releases the secrets")

	deleting := job.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	f.ctrl.jobUpdated(job, deleting)
	assert.Equal(t, []string{secretKey, testNS + "/b"}, f.drain(), "deletion releases the secrets")

	changed := job.DeepCopy()
	changed.Spec.PullSecrets = []string{"c"}
	f.ctrl.jobUpdated(job, changed)
	assert.ElementsMatch(t, []string{secretKey, testNS + "/b", testNS + "/c"}, f.drain(), "old and new references")

	f.ctrl.jobDeleted(cache.DeletedFinalStateUnknown{Key: "team/j1", Obj: job})
	assert.Equal(t, []string{secretKey, testNS + "/b"}, f.drain())

	f.ctrl.jobAdded("junk")
	f.ctrl.jobUpdated("junk", job)
	f.ctrl.jobDeleted(42)
	assert.Empty(t, f.drain())
}

func TestIndexOnlyUnfinished(t *testing.T) {
	f := newFixture(t, objects{jobs: []*appsv1beta1.ImagePullJob{
		newJob("j1", secretName),
		finishedJob("j2", secretName),
		newJob("j3", "other"),
	}})
	jobs, err := f.ctrl.jobsReferencing(secretKey)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "j1", jobs[0].Name)
	assert.True(t, f.ctrl.referenced(testNS+"/other"))
	assert.False(t, f.ctrl.referenced("elsewhere/"+secretName), "namespaced")
}

func TestSecretHandlers(t *testing.T) {
	for _, separate := range []bool{false, true} {
		t.Run(map[bool]string{false: "one secret informer", true: "separate copy informer"}[separate], func(t *testing.T) {
			src := source(secretName, dockerCfg)
			orphanSrc := source("orphan", dockerCfg)
			f := newFixture(t, objects{
				secrets:                []*corev1.Secret{src, orphanSrc, copyOf(orphanSrc)},
				jobs:                   []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
				separateDaemonInformer: separate,
			})

			unrelated := source("unrelated", dockerCfg)
			f.ctrl.secretChanged(unrelated)
			f.ctrl.secretChanged(cache.DeletedFinalStateUnknown{Key: "team/unrelated", Obj: unrelated})
			f.ctrl.secretUpdated(unrelated, source("unrelated", "changed"))
			assert.Empty(t, f.drain(), "secrets nobody references are not queued")

			f.ctrl.secretChanged(src)
			assert.Equal(t, []string{secretKey}, f.drain(), "referenced")
			f.ctrl.secretChanged(cache.DeletedFinalStateUnknown{Key: secretKey, Obj: src})
			assert.Equal(t, []string{secretKey}, f.drain(), "referenced, deleted")
			f.ctrl.secretChanged(orphanSrc)
			assert.Equal(t, []string{testNS + "/orphan"}, f.drain(), "a copy exists")

			relabelled := src.DeepCopy()
			relabelled.Labels["x"] = "y"
			relabelled.ResourceVersion = "6"
			f.ctrl.secretUpdated(src, relabelled)
			assert.Empty(t, f.drain(), "neither data nor type changed")
			f.ctrl.secretUpdated(src, source(secretName, "new"))
			assert.Equal(t, []string{secretKey}, f.drain(), "data changed")
			retyped := src.DeepCopy()
			retyped.Type = corev1.SecretTypeOpaque
			f.ctrl.secretUpdated(src, retyped)
			assert.Equal(t, []string{secretKey}, f.drain(), "type changed")

			// Copies queue their source, through either informer's handler.
			cp := copyOf(src)
			f.ctrl.secretChanged(cp)
			assert.Equal(t, []string{secretKey}, f.drain())
			f.ctrl.copyChanged(cache.DeletedFinalStateUnknown{Key: "x", Obj: cp})
			assert.Equal(t, []string{secretKey}, f.drain())
			touched := cp.DeepCopy()
			touched.Data = nil
			f.ctrl.secretUpdated(cp, touched)
			assert.Equal(t, []string{secretKey}, f.drain(), "a copy edited by someone is restored")
			unmarked := cp.DeepCopy()
			delete(unmarked.Labels, ManagedByLabel)
			f.ctrl.secretUpdated(cp, unmarked)
			assert.Equal(t, []string{secretKey}, f.drain(), "a copy losing its label")

			noAnn := cp.DeepCopy()
			noAnn.Annotations = nil
			f.ctrl.copyChanged(noAnn)
			f.ctrl.copyChanged(unrelated)
			f.ctrl.copyChanged("junk")
			f.ctrl.secretChanged("junk")
			f.ctrl.secretUpdated("junk", cp)
			assert.Empty(t, f.drain())
		})
	}
}

// A copy left behind (its jobs gone while the controller was down) is
// deleted once the copy's add event is processed.
func TestProcessNextWorkItemOrphanCopy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src := source(secretName, dockerCfg)
	cp := copyOf(src)
	f := newFixture(t, objects{secrets: []*corev1.Secret{src, cp}})
	f.ctrl.secretChanged(cp)
	require.True(t, f.ctrl.processNextWorkItem(ctx))
	assert.Nil(t, f.liveCopy(t, secretName))
	assert.Zero(t, f.ctrl.queue.Len())

	f.kube.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("boom"))
	})
	f.ctrl.secretChanged(cp)
	require.True(t, f.ctrl.processNextWorkItem(ctx))
	assert.Equal(t, 1, f.ctrl.queue.NumRequeues(secretKey), "retried with backoff")

	f.ctrl.queue.ShutDown()
	assert.False(t, f.ctrl.processNextWorkItem(ctx))
}

func TestNew(t *testing.T) {
	kube := fake.NewClientset()
	kruise := kruisefake.NewSimpleClientset()
	kfactory := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	cfg := Config{
		Config:  ctrlbase.Config{Client: kube},
		Secrets: informers.NewSharedInformerFactory(kube, 0).Core().V1().Secrets(),
		Jobs:    kfactory.Apps().V1beta1().ImagePullJobs(),
	}
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	assert.Equal(t, "pullsecrets", c.Name())
	assert.Equal(t, appsv1beta1.DaemonConfigNamespace, c.namespace, "default")

	// A second controller on the same informers reuses the index.
	other := cfg
	other.Namespace = "elsewhere"
	c2, err := New(other)
	require.NoError(t, err)
	t.Cleanup(c2.queue.ShutDown)
	assert.Equal(t, "elsewhere", c2.namespace)

	for name, mut := range map[string]func(*Config){
		"Client":  func(c *Config) { c.Client = nil },
		"Secrets": func(c *Config) { c.Secrets = nil },
		"Jobs":    func(c *Config) { c.Jobs = nil },
	} {
		bad := cfg
		mut(&bad)
		_, err := New(bad)
		assert.Error(t, err, name)
	}
}

// The references annotation is sorted, without repeats, and bounded: a
// secret shared by very many jobs still fits in a Secret's annotations.
func TestReferencesValue(t *testing.T) {
	jobs := []*appsv1beta1.ImagePullJob{newJob("b", secretName), newJob("a", secretName), newJob("b", secretName)}
	assert.Equal(t, "team/a,team/b", referencesValue(jobs))
	assert.Empty(t, referencesValue(nil))

	many := make([]*appsv1beta1.ImagePullJob, 0, 5000)
	for i := range 5000 {
		many = append(many, newJob(fmt.Sprintf("job-%04d-%s", i, strings.Repeat("x", 40)), secretName))
	}
	v := referencesValue(many)
	assert.LessOrEqual(t, len(v), maxReferences)
	assert.True(t, strings.HasPrefix(v, "team/job-0000-"), "the first in sorted order are kept")
	assert.False(t, strings.HasSuffix(v, ","), "only whole entries")
}
