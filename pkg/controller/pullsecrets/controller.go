package pullsecrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "pullsecrets"

// ManagedByValue is ManagedByLabel's value on a copy.
const ManagedByValue = "true"

// jobsBySecretIndex indexes the unfinished ImagePullJobs (neither completed
// nor being deleted, see finished) by the secrets they reference, as "namespace/name" (the queue's keys).
const jobsBySecretIndex = "pullsecrets.apps.kruise.io/unfinished-by-secret"

// Config is what the controller is built from.
type Config struct {
	// Config's KruiseClient is optional and not used yet: jobs are only read
	// (from Jobs) and Events are written through Client.
	ctrlbase.Config
	// Secrets sees the source secrets: every namespace a job may be in.
	Secrets coreinformers.SecretInformer
	// DaemonSecrets sees the copies in Namespace; nil means Secrets, which
	// must then see that namespace too.
	DaemonSecrets coreinformers.SecretInformer
	// Jobs are the v1beta1 ImagePullJobs.
	Jobs kruiseinformers.ImagePullJobInformer
	// Namespace holds the copies; "" is v1beta1.DaemonConfigNamespace.
	// The install creates it: this controller does not (see sync).
	Namespace string
}

// Controller keeps the copies.
type Controller struct {
	client       kubernetes.Interface
	namespace    string
	secrets      corelisters.SecretLister
	daemonLister corelisters.SecretLister
	jobIndexer   cache.Indexer
	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]

	// reported remembers, per job UID, the Events already recorded on it,
	// so that each is recorded once per job per process.
	reportedMu sync.Mutex
	reported   map[string]map[string]bool
}

// New builds the controller, adds its index to the jobs informer and
// registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Secrets == nil || cfg.Jobs == nil {
		return nil, errors.New("pullsecrets: Client, Secrets and Jobs are required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = appsv1beta1.DaemonConfigNamespace
	}
	if cfg.DaemonSecrets == nil {
		cfg.DaemonSecrets = cfg.Secrets
	}
	clk := cfg.ClockOrReal()
	jobs := cfg.Jobs.Informer()
	if _, exists := jobs.GetIndexer().GetIndexers()[jobsBySecretIndex]; !exists {
		if err := jobs.AddIndexers(cache.Indexers{jobsBySecretIndex: indexUnfinishedBySecret}); err != nil {
			return nil, fmt.Errorf("adding ImagePullJob index: %w", err)
		}
	}
	c := &Controller{
		client:       cfg.Client,
		namespace:    cfg.Namespace,
		secrets:      cfg.Secrets.Lister(),
		daemonLister: cfg.DaemonSecrets.Lister(),
		jobIndexer:   jobs.GetIndexer(),
		recorder:     cfg.Recorder,
		queue:        workers.NewQueue(Name, clk),
		reported:     map[string]map[string]bool{},
	}
	if _, err := jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobAdded,
		UpdateFunc: c.jobUpdated,
		DeleteFunc: c.jobDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding ImagePullJob event handler: %w", err)
	}
	sameInformer := cfg.DaemonSecrets.Informer() == cfg.Secrets.Informer()
	if _, err := cfg.Secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.secretChanged,
		UpdateFunc: c.secretUpdated,
		DeleteFunc: c.secretChanged,
	}); err != nil {
		return nil, fmt.Errorf("adding secret event handler: %w", err)
	}
	if !sameInformer {
		if _, err := cfg.DaemonSecrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.copyChanged,
			UpdateFunc: func(_, cur any) { c.copyChanged(cur) },
			DeleteFunc: c.copyChanged,
		}); err != nil {
			return nil, fmt.Errorf("adding daemon-config secret event handler: %w", err)
		}
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes source secrets with n workers until ctx ends. Caches must
// be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n, "namespace", c.namespace)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "secret"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}

// finished reports whether the job is done or being deleted: its copies are
// no longer needed. A job being deleted waits, under the protection
// finalizer (pkg/controller/imagepulljob), until no copy names it, so it
// must release its copies here rather than when it is gone.
func finished(job *appsv1beta1.ImagePullJob) bool {
	return job.Status.CompletionTime != nil || job.DeletionTimestamp != nil
}

// ReferencedJobs lists the jobs ("namespace/name") a copy's references
// annotation names; nil for a secret that is not a copy. The list is a
// record, cut at maxReferences: a job left out of it holds no copy for the
// finalizer's purpose, which is right, since the copy then stays for others.
func ReferencedJobs(s *corev1.Secret) []string {
	if s.Labels[ManagedByLabel] != ManagedByValue || s.Annotations[ReferencesAnnotation] == "" {
		return nil
	}
	return strings.Split(s.Annotations[ReferencesAnnotation], ",")
}

// secretKeys are the "namespace/name" keys of the secrets the job
// references, without repeats or empty names.
func secretKeys(job *appsv1beta1.ImagePullJob) []string {
	out := make([]string, 0, len(job.Spec.PullSecrets))
	for _, name := range job.Spec.PullSecrets {
		if name == "" {
			continue
		}
		if key := job.Namespace + "/" + name; !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}

// indexUnfinishedBySecret indexes a job by its secrets while it is
// unfinished; a finished job is in no bucket.
func indexUnfinishedBySecret(obj any) ([]string, error) {
	job, ok := obj.(*appsv1beta1.ImagePullJob)
	if !ok || finished(job) {
		return nil, nil
	}
	return secretKeys(job), nil
}

func asJob(obj any) (*appsv1beta1.ImagePullJob, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	job, ok := obj.(*appsv1beta1.ImagePullJob)
	return job, ok
}

func (c *Controller) enqueueSecretsOf(job *appsv1beta1.ImagePullJob) {
	for _, key := range secretKeys(job) {
		c.queue.Add(key)
	}
}

func (c *Controller) jobAdded(obj any) {
	if job, ok := asJob(obj); ok {
		c.enqueueSecretsOf(job)
	}
}

// jobUpdated queues the secrets of both versions when the references or
// whether the job is finished changed; status progress (frequent) is not
// looked at.
func (c *Controller) jobUpdated(oldObj, newObj any) {
	old, ok1 := asJob(oldObj)
	cur, ok2 := asJob(newObj)
	if !ok1 || !ok2 {
		return
	}
	if finished(old) == finished(cur) && slices.Equal(secretKeys(old), secretKeys(cur)) {
		return
	}
	c.enqueueSecretsOf(old)
	c.enqueueSecretsOf(cur)
}

func (c *Controller) jobDeleted(obj any) {
	job, ok := asJob(obj)
	if !ok {
		return
	}
	c.enqueueSecretsOf(job)
	c.reportedMu.Lock()
	delete(c.reported, string(job.UID))
	c.reportedMu.Unlock()
}

func asSecret(obj any) (*corev1.Secret, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*corev1.Secret)
	return s, ok
}

// isCopy reports whether the secret is one of the copies (by its label:
// which source it copies is checked in sync).
func (c *Controller) isCopy(s *corev1.Secret) bool {
	return s.Namespace == c.namespace && s.Labels[ManagedByLabel] == ManagedByValue
}

// secretChanged handles any secret: a copy queues its source; another
// secret queues itself if a job references it or a copy of it exists.
// Secrets no job needs, by far the most, cost two map lookups.
func (c *Controller) secretChanged(obj any) {
	s, ok := asSecret(obj)
	if !ok {
		return
	}
	if c.isCopy(s) {
		c.copyChanged(s)
		return
	}
	key := s.Namespace + "/" + s.Name
	if c.referenced(key) || c.copyExists(s.Namespace, s.Name) {
		c.queue.Add(key)
	}
}

// secretUpdated ignores source updates that change neither type nor data.
func (c *Controller) secretUpdated(oldObj, newObj any) {
	old, ok1 := asSecret(oldObj)
	cur, ok2 := asSecret(newObj)
	if !ok1 || !ok2 {
		return
	}
	if !c.isCopy(cur) && !c.isCopy(old) && old.Type == cur.Type && dataEqual(old.Data, cur.Data) {
		return
	}
	if c.isCopy(old) && !c.isCopy(cur) {
		c.copyChanged(old)
	}
	c.secretChanged(cur)
}

// copyChanged queues the source a copy names in its annotations.
func (c *Controller) copyChanged(obj any) {
	s, ok := asSecret(obj)
	if !ok || !c.isCopy(s) {
		return
	}
	ns, name := s.Annotations[SourceNamespaceAnnotation], s.Annotations[SourceNameAnnotation]
	if ns == "" || name == "" {
		return
	}
	c.queue.Add(ns + "/" + name)
}

// referenced reports whether an unfinished job references the secret key.
func (c *Controller) referenced(key string) bool {
	keys, err := c.jobIndexer.IndexKeys(jobsBySecretIndex, key)
	return err == nil && len(keys) > 0
}

func (c *Controller) copyExists(namespace, name string) bool {
	_, err := c.daemonLister.Secrets(c.namespace).Get(CopyName(namespace, name))
	return err == nil
}

func dataEqual(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// report records an Event on the job unless this process already recorded
// the same one on it.
func (c *Controller) report(job *appsv1beta1.ImagePullJob, eventType, reason, message string) {
	c.reportedMu.Lock()
	seen := c.reported[string(job.UID)]
	if seen == nil {
		seen = map[string]bool{}
		c.reported[string(job.UID)] = seen
	}
	id := reason + "\x00" + message
	dup := seen[id]
	seen[id] = true
	c.reportedMu.Unlock()
	if !dup {
		c.recorder.Event(job, eventType, reason, message)
	}
}
