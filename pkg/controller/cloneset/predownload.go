package cloneset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/inplace"
	"github.com/nodekruise/kruise/pkg/ownership"
	"github.com/nodekruise/kruise/pkg/podstate"
	"github.com/nodekruise/kruise/pkg/revision"
)

// Image pre-download (gate PreDownloadImageForInPlaceUpdate): while a CloneSet updates in place
// in more than one batch, an ImagePullJob per changed image pulls the new image on the nodes of
// the pods still to be updated, so that by their turn the image is there and the in-place
// update is a restart rather than a pull. The numbers are the reference's.
const (
	// preDownloadMinReplicas: a CloneSet of this many replicas or fewer is not worth it.
	preDownloadMinReplicas = 3
	// defaultPreDownloadTimeoutSeconds bounds each pull unless the CloneSet says otherwise.
	defaultPreDownloadTimeoutSeconds int32 = 300
	// preDownloadBackoffLimit: one retry per node; the update pulls anyway if it fails.
	preDownloadBackoffLimit int32 = 1
	// preDownloadTTLSeconds: a finished job is deleted this long after.
	preDownloadTTLSeconds int32 = 600
	// maxJobNameLength is the longest name an ImagePullJob (a DNS subdomain) may have.
	maxJobNameLength = 253
)

// PreDownloadAction is what the controller does about a revision's images.
type PreDownloadAction int

const (
	// PreDownloadNothing: nothing now (already done for the revision, or waiting for updated
	// pods to be ready).
	PreDownloadNothing PreDownloadAction = iota
	// PreDownloadIgnore: the revision gains nothing from pre-download; it is labelled
	// apps.kruise.io/image-predownload-ignored so that the question is not asked again.
	PreDownloadIgnore
	// PreDownloadCreate: create the plan's jobs, then label the revision
	// apps.kruise.io/pre-predownload-created.
	PreDownloadCreate
)

// PreDownloadInput is what the pre-download decision reads.
type PreDownloadInput struct {
	CloneSet *appsv1beta1.CloneSet
	// Budget is the CloneSet's strategy resolved to counts.
	Budget Budget
	Policy inplace.UpdatePolicy
	// Current and Update are the CloneSet's revisions, and CurrentTemplate and UpdateTemplate
	// their pod templates (CurrentTemplate nil when unreadable).
	Current, Update                 *appsv1.ControllerRevision
	CurrentTemplate, UpdateTemplate *corev1.PodTemplateSpec
	// UpdatedReady counts the pods at the update revision that are ready.
	UpdatedReady int
}

// PreDownloadPlan is the decision: what to do, why (for the log), and the jobs to create.
type PreDownloadPlan struct {
	Action PreDownloadAction
	Reason string
	Jobs   []*appsv1beta1.ImagePullJob
}

// PlanPreDownload decides whether the move from in.Current to in.Update pre-downloads images,
// and builds the jobs. It reads nothing but its input.
func PlanPreDownload(in PreDownloadInput) PreDownloadPlan {
	cs, update := in.CloneSet, in.Update
	if in.Current == nil || update == nil || in.Current.Name == update.Name {
		return PreDownloadPlan{Reason: "no update under way"}
	}
	if _, ok := update.Labels[appsv1beta1.ImagePreDownloadCreatedKey]; ok {
		return PreDownloadPlan{Reason: "jobs already created for the revision"}
	}
	if _, ok := update.Labels[appsv1beta1.ImagePreDownloadIgnoredKey]; ok {
		return PreDownloadPlan{Reason: "revision already ignored"}
	}
	ignore := func(why string) PreDownloadPlan { return PreDownloadPlan{Action: PreDownloadIgnore, Reason: why} }
	if in.Policy == inplace.PolicyReCreate {
		return ignore("pods are recreated, not updated in place")
	}
	if in.Budget.Replicas <= preDownloadMinReplicas {
		return ignore(fmt.Sprintf("replicas %d, not more than %d", in.Budget.Replicas, preDownloadMinReplicas))
	}
	if in.Budget.Partition == 0 && in.Budget.MaxUnavailable >= in.Budget.Replicas {
		return ignore("every pod is updated in the first batch")
	}
	if r := inplace.RouteUpdate(in.Policy, in.CurrentTemplate, in.UpdateTemplate, inPlaceOptions); r.InPlace == nil {
		return ignore("the change cannot be applied in place")
	}
	images := changedImages(in.CurrentTemplate, in.UpdateTemplate)
	if len(images) == 0 {
		return ignore("no image changed")
	}
	s := preDownloadSettingsOf(cs, in.Budget.Replicas)
	if in.UpdatedReady < s.minUpdatedReady {
		return PreDownloadPlan{Reason: fmt.Sprintf("%d updated pods ready, waiting for %d", in.UpdatedReady, s.minUpdatedReady)}
	}
	jobs := make([]*appsv1beta1.ImagePullJob, 0, len(images))
	for _, ci := range images {
		jobs = append(jobs, preDownloadJob(cs, update, ci, s))
	}
	return PreDownloadPlan{Action: PreDownloadCreate, Reason: fmt.Sprintf("%d images changed", len(jobs)), Jobs: jobs}
}

// containerImage is a container's new image.
type containerImage struct{ container, image string }

// changedImages lists, in template order, the containers (and native sidecars, which a CloneSet
// also updates in place) whose image differs between from and to. The reference makes a job per
// container even when two name the same image; one job per image is enough, named after the
// first container that has it.
func changedImages(from, to *corev1.PodTemplateSpec) []containerImage {
	if from == nil || to == nil {
		return nil
	}
	old := map[string]string{}
	for _, c := range from.Spec.InitContainers {
		old[c.Name] = c.Image
	}
	for _, c := range from.Spec.Containers {
		old[c.Name] = c.Image
	}
	var out []containerImage
	seen := map[string]bool{}
	add := func(c corev1.Container) {
		if was, ok := old[c.Name]; !ok || was == c.Image || seen[c.Image] {
			return
		}
		seen[c.Image] = true
		out = append(out, containerImage{container: c.Name, image: c.Image})
	}
	for _, c := range to.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range to.Spec.Containers {
		add(c)
	}
	return out
}

// preDownloadSettings are the CloneSet's knobs, resolved.
type preDownloadSettings struct {
	parallelism     int32
	timeoutSeconds  int32
	minUpdatedReady int
}

// preDownloadSettingsOf reads the v1beta1 fields of inPlaceUpdateStrategy and, when one is unset,
// its v1alpha1 annotation (a v1beta1 CloneSet written with the annotation keeps it as is).
// Unusable values fall back to the defaults. The reference hands a percentage parallelism to
// the ImagePullJob as is, which the ImagePullJob schema refuses; here it is a share of replicas,
// rounded up, and at least 1.
func preDownloadSettingsOf(cs *appsv1beta1.CloneSet, replicas int) preDownloadSettings {
	var ips pub.InPlaceUpdateStrategy
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		ips = *ru.InPlaceUpdateStrategy
	}
	annotation := func(key string) (int64, bool) {
		v, err := strconv.ParseInt(cs.Annotations[key], 10, 32)
		return v, err == nil
	}
	s := preDownloadSettings{parallelism: 1, timeoutSeconds: defaultPreDownloadTimeoutSeconds}

	par := ips.ImagePreDownloadParallelism
	if par == nil {
		if v, ok := cs.Annotations[appsv1beta1.ImagePreDownloadParallelismKey]; ok {
			p := intstr.Parse(v)
			par = &p
		}
	}
	if par != nil {
		if n, err := intstr.GetScaledValueFromIntOrPercent(par, replicas, true); err == nil && n > 0 {
			s.parallelism = int32(min(n, 1<<31-1))
		}
	}

	if t := ips.ImagePreDownloadTimeoutSeconds; t != nil && *t > 0 {
		s.timeoutSeconds = *t
	} else if v, ok := annotation(appsv1beta1.ImagePreDownloadTimeoutSecondsKey); t == nil && ok && v > 0 {
		s.timeoutSeconds = int32(v)
	}

	if m := ips.ImagePreDownloadMinUpdatedReadyPods; m != nil && *m > 0 {
		s.minUpdatedReady = int(*m)
	} else if v, ok := annotation(appsv1beta1.ImagePreDownloadMinUpdatedReadyPods); m == nil && ok && v > 0 {
		s.minUpdatedReady = int(v)
	}
	return s
}

// preDownloadJob is the ImagePullJob that pulls ci's image on the nodes of cs's pods not yet at
// update. Like the reference's it carries the pod template's labels (the CloneSet's objects
// match its selector) and the revision's hash, and hands both, with the template's annotations,
// to the runtime as the sandbox metadata.
func preDownloadJob(cs *appsv1beta1.CloneSet, update *appsv1.ControllerRevision, ci containerImage, s preDownloadSettings) *appsv1beta1.ImagePullJob {
	hash := update.Labels[revision.HashLabel]
	labels := maps.Clone(cs.Spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if hash != "" {
		labels[revision.HashLabel] = hash
	}
	notUpdated := []string{update.Name}
	if hash != "" && hash != update.Name {
		notUpdated = append(notUpdated, hash) // pods named by the short hash (CloneSetShortHash)
	}
	selector := cs.Spec.Selector.DeepCopy()
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: notUpdated,
	})
	var secrets []string
	for _, s := range cs.Spec.Template.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	parallelism := intstr.FromInt32(s.parallelism)
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PreDownloadJobName(update.Name, ci.container),
			Namespace:       cs.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, controllerKind)},
		},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: ci.image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				PullSecrets: secrets,
				PodSelector: &appsv1beta1.ImagePullJobPodSelector{LabelSelector: *selector},
				Parallelism: &parallelism,
				PullPolicy: &appsv1beta1.PullPolicy{
					TimeoutSeconds: ptr.To(s.timeoutSeconds), BackoffLimit: ptr.To(preDownloadBackoffLimit),
				},
				CompletionPolicy: appsv1beta1.CompletionPolicy{
					Type: appsv1beta1.Always, TTLSecondsAfterFinished: ptr.To(preDownloadTTLSeconds),
				},
				SandboxConfig: &appsv1beta1.SandboxConfig{
					Labels: maps.Clone(labels), Annotations: maps.Clone(cs.Spec.Template.Annotations),
				},
				ImagePullPolicy: appsv1beta1.PullIfNotPresent,
			},
		},
	}
}

// PreDownloadJobName is the name of the job that pre-downloads container's image for revision:
// "<revision>-<container>", as the reference names it. The reference lets a name grow past what
// the API server takes (a long CloneSet name and a long container name), and the job is then
// never created; such a name is cut and ends in a hash of the whole, so it stays unique.
func PreDownloadJobName(revisionName, container string) string {
	name := revisionName + "-" + container
	if len(name) <= maxJobNameLength {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name)) // a hash.Hash never fails to write
	suffix := rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 16))
	return strings.TrimRight(name[:maxJobNameLength-len(suffix)-1], ".-") + "-" + suffix
}

// Event reasons of pre-download (the reference's for the jobs).
const (
	ReasonCreatedImagePullJob      = "CreatedImagePullJob"
	ReasonFailedCreateImagePullJob = "FailedCreateImagePullJob"
	ReasonPreDownloadFailed        = "PreDownloadFailed"
)

// preDownload acts on PlanPreDownload for the pass's CloneSet, and deletes its jobs that no
// longer serve the update. It does nothing unless the gate is on. A failure is told in an Event
// and returned, so that the CloneSet is synced again; the revision is labelled only once every
// job exists (the reference labels it whatever the creations did, so a failed job is never
// retried).
func (c *Controller) preDownload(ctx context.Context, p *pass) error {
	if !c.preDownloadImages {
		return nil
	}
	if err := c.deleteStalePreDownloads(ctx, p); err != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonPreDownloadFailed, "failed to delete a finished pre-download ImagePullJob: %v", err)
		return err
	}
	h := p.history
	ready := 0
	for _, pod := range p.pods {
		if podstate.Revision(pod) == h.updateName() && podstate.Ready(pod) {
			ready++
		}
	}
	plan := PlanPreDownload(PreDownloadInput{CloneSet: p.cs, Budget: p.budget, Policy: p.policy,
		Current: h.Current, Update: h.Update, CurrentTemplate: h.template(h.currentName()), UpdateTemplate: h.template(h.updateName()),
		UpdatedReady: ready})
	logger := klog.FromContext(ctx)
	switch plan.Action {
	case PreDownloadIgnore:
		logger.V(4).Info("No image pre-download for the revision", "revision", h.updateName(), "reason", plan.Reason)
		return c.labelRevision(ctx, p, appsv1beta1.ImagePreDownloadIgnoredKey)
	case PreDownloadCreate:
		var errs []error
		for _, job := range plan.Jobs {
			if err := c.createPreDownloadJob(ctx, p, job); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		return c.labelRevision(ctx, p, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	return nil
}

// createPreDownloadJob creates job unless it exists (in the cache or, found on creating, in the
// API server).
func (c *Controller) createPreDownloadJob(ctx context.Context, p *pass, job *appsv1beta1.ImagePullJob) error {
	if _, err := c.jobs.ImagePullJobs(job.Namespace).Get(job.Name); err == nil {
		return nil
	}
	_, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedCreateImagePullJob, "failed to create ImagePullJob %s: %v", job.Name, err)
		return fmt.Errorf("creating ImagePullJob %s: %w", job.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created pre-download ImagePullJob", "imagePullJob", klog.KObj(job), "image", job.Spec.Image)
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonCreatedImagePullJob, "created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
	return nil
}

// labelRevision marks the update revision with key, so that pre-download is decided once.
func (c *Controller) labelRevision(ctx context.Context, p *pass, key string) error {
	rev := p.history.Update
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: "true"}}})
	_, err := c.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonPreDownloadFailed, "failed to label revision %s %s: %v", rev.Name, key, err)
		return fmt.Errorf("labelling revision %s %s: %w", rev.Name, key, err)
	}
	return nil
}

// deleteStalePreDownloads deletes the CloneSet's jobs that pull for another revision than the
// update revision, or for any once the update is done: their pods are updated, or no longer to
// be (the reference deletes them only when the update is done, and leaves a superseded
// revision's jobs pulling an image no pod will run).
func (c *Controller) deleteStalePreDownloads(ctx context.Context, p *pass) error {
	jobs, err := ownership.Owned[*appsv1beta1.ImagePullJob](c.jobIndex, controllerKind, p.cs.UID)
	if err != nil {
		return err
	}
	done := p.history.currentName() == p.history.updateName()
	hash := p.history.Update.Labels[revision.HashLabel]
	var errs []error
	for _, job := range jobs {
		if job.DeletionTimestamp != nil || (!done && job.Labels[revision.HashLabel] == hash) {
			continue
		}
		err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &job.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting ImagePullJob %s: %w", job.Name, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted pre-download ImagePullJob", "imagePullJob", klog.KObj(job))
	}
	return errors.Join(errs...)
}
