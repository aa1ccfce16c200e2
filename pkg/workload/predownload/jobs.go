package predownload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Object is a workload, which Events are recorded on.
type Object interface {
	metav1.Object
	runtime.Object
}

// JobsConfig is what Jobs is built from. The informer must not be started yet.
type JobsConfig struct {
	// Client patches the update revision; KruiseClient writes the jobs.
	Client       kubernetes.Interface
	KruiseClient versioned.Interface
	Jobs         kruiseinformers.ImagePullJobInformer
	// Kind is the workloads' kind, whose jobs are found by their controller reference.
	Kind schema.GroupVersionKind
}

// Jobs carries out pre-download decisions for the workloads of one kind.
type Jobs struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	jobs         kruiselisters.ImagePullJobLister
	jobIndex     cache.Indexer
	kind         schema.GroupVersionKind
}

// NewJobs builds Jobs and registers the index of jobs by owner on the informer.
func NewJobs(cfg JobsConfig) (*Jobs, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Jobs == nil {
		return nil, errors.New("predownload: Client, KruiseClient and Jobs are required")
	}
	if err := ownership.AddIndex(cfg.Jobs.Informer(), cfg.Kind); err != nil {
		return nil, fmt.Errorf("adding the ImagePullJob owner index: %w", err)
	}
	return &Jobs{client: cfg.Client, kruiseClient: cfg.KruiseClient, jobs: cfg.Jobs.Lister(),
		jobIndex: cfg.Jobs.Informer().GetIndexer(), kind: cfg.Kind}, nil
}

// Apply acts on plan for owner's update revision: labels it ignored, or creates the jobs and
// then labels it created. A failure is told in an Event on owner and returned, so that the
// workload is synced again; the revision is labelled only once every job exists (the reference
// labels it whatever the creations did, so a failed job is never retried).
func (j *Jobs) Apply(ctx context.Context, rec record.EventRecorder, owner Object, update *appsv1.ControllerRevision, plan Plan) error {
	logger := klog.FromContext(ctx)
	switch plan.Action {
	case Ignore:
		logger.V(4).Info("No image pre-download for the revision", "revision", update.Name, "reason", plan.Reason)
		return j.labelRevision(ctx, rec, owner, update, appsv1beta1.ImagePreDownloadIgnoredKey)
	case Create:
		var errs []error
		for _, job := range plan.Jobs {
			if err := j.create(ctx, rec, owner, job); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		return j.labelRevision(ctx, rec, owner, update, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	logger.V(5).Info("Image pre-download: nothing to do", "reason", plan.Reason)
	return nil
}

// create creates job unless it exists (in the cache or, found on creating, in the API server).
func (j *Jobs) create(ctx context.Context, rec record.EventRecorder, owner Object, job *appsv1beta1.ImagePullJob) error {
	if _, err := j.jobs.ImagePullJobs(job.Namespace).Get(job.Name); err == nil {
		return nil
	}
	_, err := j.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		rec.Eventf(owner, corev1.EventTypeWarning, ReasonFailedCreateImagePullJob, "failed to create ImagePullJob %s: %v", job.Name, err)
		return fmt.Errorf("creating ImagePullJob %s: %w", job.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created pre-download ImagePullJob", "imagePullJob", klog.KObj(job), "image", job.Spec.Image)
	rec.Eventf(owner, corev1.EventTypeNormal, ReasonCreatedImagePullJob, "created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
	return nil
}

// labelRevision marks rev with key, so that pre-download is decided once per revision.
func (j *Jobs) labelRevision(ctx context.Context, rec record.EventRecorder, owner Object, rev *appsv1.ControllerRevision, key string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: "true"}}})
	_, err := j.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		rec.Eventf(owner, corev1.EventTypeWarning, ReasonPreDownloadFailed, "failed to label revision %s %s: %v", rev.Name, key, err)
		return fmt.Errorf("labelling revision %s %s: %w", rev.Name, key, err)
	}
	return nil
}

// DeleteStale deletes owner's jobs that pull for another revision than the one of hash
// updateHash, or all of them when updateHash is "" (the update is done: its pods are updated,
// or no longer to be). The reference deletes them only when the update is done, and leaves a
// superseded revision's jobs pulling an image no pod will run. A failure is told in an Event.
func (j *Jobs) DeleteStale(ctx context.Context, rec record.EventRecorder, owner Object, updateHash string) error {
	jobs, err := ownership.Owned[*appsv1beta1.ImagePullJob](j.jobIndex, j.kind, owner)
	if err != nil {
		return fmt.Errorf("listing the pre-download ImagePullJobs: %w", err)
	}
	var errs []error
	for _, job := range jobs {
		if job.DeletionTimestamp != nil || (updateHash != "" && job.Labels[revision.HashLabel] == updateHash) {
			continue
		}
		err := j.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &job.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting ImagePullJob %s: %w", job.Name, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted pre-download ImagePullJob", "imagePullJob", klog.KObj(job))
	}
	if err := errors.Join(errs...); err != nil {
		rec.Eventf(owner, corev1.EventTypeWarning, ReasonPreDownloadFailed, "failed to delete a stale pre-download ImagePullJob: %v", err)
		return err
	}
	return nil
}
