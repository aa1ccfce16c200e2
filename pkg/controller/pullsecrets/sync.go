package pullsecrets

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Event reasons recorded on ImagePullJobs.
const (
	// ReasonPullSecretNotFound: a secret in spec.pullSecrets does not
	// exist, so there is no copy of it for kruise-daemon.
	ReasonPullSecretNotFound = "PullSecretNotFound"
	// ReasonNamespaceMissing: the namespace of the copies does not exist.
	// The install creates it; this controller does not (it would need
	// cluster-wide namespace create permission for a one-off step).
	ReasonNamespaceMissing = "PullSecretNamespaceMissing"
	// ReasonCopyConflict: a secret with the copy's name exists that is not
	// this controller's copy of that source; it is left alone.
	ReasonCopyConflict = "PullSecretCopyConflict"
)

// sync brings the copy of the source secret key ("namespace/name") in line
// with the source and the unfinished jobs that reference it. Everything is
// recomputed from the caches on each call: the copy exists exactly while an
// unfinished job references an existing source that is a registry
// credential (see Unusable).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || ns == "" || name == "" {
		return 0, nil
	}
	copyName := CopyName(ns, name)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "secret", klog.KRef(ns, name), "copy", klog.KRef(c.namespace, copyName))
	ctx = klog.NewContext(ctx, logger)

	jobs, err := c.jobsReferencing(key)
	if err != nil {
		return 0, err
	}
	cp, err := c.daemonLister.Secrets(c.namespace).Get(copyName)
	switch {
	case apierrors.IsNotFound(err):
		cp = nil
	case err != nil:
		return 0, err
	}
	if cp != nil && !isCopyOf(cp, ns, name) {
		if len(jobs) > 0 {
			msg := fmt.Sprintf("Secret %s/%s exists and is not kruise's copy of pull secret %s; left alone, "+
				"so kruise-daemon cannot use %s", c.namespace, copyName, name, name)
			logger.Info("Copy name taken by another secret; not touching it")
			for _, job := range jobs {
				c.report(job, corev1.EventTypeWarning, ReasonCopyConflict, msg)
			}
		}
		return 0, nil
	}

	if len(jobs) == 0 {
		if cp == nil {
			return 0, nil
		}
		logger.V(2).Info("No unfinished ImagePullJob references the secret; deleting its copy")
		return 0, c.deleteCopy(ctx, cp)
	}

	src, err := c.secrets.Secrets(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("Pull secret %s not found in namespace %s: pulls go ahead without it; a registry that needs it refuses them, and the failure names it", name, ns)
		for _, job := range jobs {
			c.report(job, corev1.EventTypeWarning, ReasonPullSecretNotFound, msg)
		}
		if cp == nil {
			return 0, nil
		}
		logger.V(2).Info("Source secret is gone; deleting its copy")
		return 0, c.deleteCopy(ctx, cp)
	case err != nil:
		return 0, err
	}
	if c.isCopy(src) {
		// A job in the copies' namespace naming a copy: it is usable as it
		// is, and a copy of a copy would be nobody's.
		logger.V(4).Info("Referenced secret is itself a copy; nothing to do")
		return 0, nil
	}
	if problem := Unusable(src); problem != "" {
		msg := fmt.Sprintf("Pull secret %s is not used: %s. Only registry credentials are passed to kruise-daemon; "+
			"the pull goes ahead without it", name, problem)
		for _, job := range jobs {
			c.report(job, corev1.EventTypeWarning, ReasonInvalidPullSecret, msg)
		}
		if cp == nil {
			return 0, nil
		}
		// A copy made before the type was checked (an earlier kruise),
		// or of the source before its type changed.
		logger.Info("Deleting the copy of a secret that is not a registry credential", "type", src.Type)
		return 0, c.deleteCopy(ctx, cp)
	}

	refs := referencesValue(jobs)
	switch {
	case cp == nil:
		return 0, c.createCopy(ctx, src, jobs, refs)
	case cp.Type != src.Type || (cp.Immutable != nil && *cp.Immutable):
		// A secret's type (and an immutable secret's data) cannot change:
		// replace the copy.
		logger.V(2).Info("Copy cannot be updated in place; replacing it", "type", src.Type)
		if err := c.deleteCopy(ctx, cp); err != nil {
			return 0, err
		}
		return 0, c.createCopy(ctx, src, jobs, refs)
	case dataEqual(cp.Data, src.Data) && cp.Annotations[SourceKeyAnnotation] == key && cp.Annotations[ReferencesAnnotation] == refs:
		return 0, nil
	default:
		upd := cp.DeepCopy()
		upd.Data = maps.Clone(src.Data)
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		upd.Annotations[SourceKeyAnnotation] = key
		upd.Annotations[ReferencesAnnotation] = refs
		if _, err := c.client.CoreV1().Secrets(c.namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				// Deleted meanwhile: its delete event brings the key back.
				return 0, nil
			}
			return 0, fmt.Errorf("updating secret %s/%s: %w", c.namespace, copyName, err)
		}
		logger.V(2).Info("Updated the copy")
		return 0, nil
	}
}

// jobsReferencing lists the unfinished jobs that reference the secret key.
func (c *Controller) jobsReferencing(key string) ([]*appsv1beta1.ImagePullJob, error) {
	objs, err := c.jobIndexer.ByIndex(jobsBySecretIndex, key)
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1beta1.ImagePullJob, 0, len(objs))
	for _, o := range objs {
		if job, ok := o.(*appsv1beta1.ImagePullJob); ok {
			out = append(out, job)
		}
	}
	return out, nil
}

// isCopyOf reports whether s is this controller's copy of ns/name.
func isCopyOf(s *corev1.Secret, ns, name string) bool {
	return s.Labels[ManagedByLabel] == ManagedByValue &&
		s.Annotations[SourceNamespaceAnnotation] == ns && s.Annotations[SourceNameAnnotation] == name
}

// referencesValue is the references annotation for the jobs: their
// "namespace/name", sorted, comma-separated, cut at maxReferences.
func referencesValue(jobs []*appsv1beta1.ImagePullJob) string {
	keys := make([]string, 0, len(jobs))
	for _, j := range jobs {
		keys = append(keys, j.Namespace+"/"+j.Name)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range slices.Compact(keys) {
		if b.Len()+1+len(k) > maxReferences {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
	}
	return b.String()
}

// newCopy is the copy of src: same type and data, marked as ours, naming
// the jobs that reference it (refs, from referencesValue).
func (c *Controller) newCopy(src *corev1.Secret, refs string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      CopyName(src.Namespace, src.Name),
			Namespace: c.namespace,
			Labels:    map[string]string{ManagedByLabel: ManagedByValue},
			Annotations: map[string]string{
				SourceNamespaceAnnotation: src.Namespace,
				SourceNameAnnotation:      src.Name,
				SourceKeyAnnotation:       src.Namespace + "/" + src.Name,
				ReferencesAnnotation:      refs,
			},
		},
		Type: src.Type,
		Data: maps.Clone(src.Data),
	}
}

// createCopy creates the copy of src. A missing namespace is reported on
// the jobs (once each) and retried with backoff: the install creates it.
func (c *Controller) createCopy(ctx context.Context, src *corev1.Secret, jobs []*appsv1beta1.ImagePullJob, refs string) error {
	want := c.newCopy(src, refs)
	_, err := c.client.CoreV1().Secrets(c.namespace).Create(ctx, want, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Created the copy")
		return nil
	case apierrors.IsAlreadyExists(err):
		// The cache has not seen it yet: its add event brings the key back.
		klog.FromContext(ctx).V(4).Info("Copy already exists; waiting for the cache")
		return nil
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("Namespace %s, where kruise keeps the pull secrets kruise-daemon reads, does not exist: "+
			"pull secret %s cannot be passed on (it is created by the kruise install)", c.namespace, src.Name)
		for _, job := range jobs {
			c.report(job, corev1.EventTypeWarning, ReasonNamespaceMissing, msg)
		}
		klog.FromContext(ctx).Error(err, "Namespace for the pull secret copies is missing; the install creates it", "namespace", c.namespace)
	}
	return fmt.Errorf("creating secret %s/%s: %w", want.Namespace, want.Name, err)
}

// deleteCopy deletes the copy the cache shows (and no newer one).
func (c *Controller) deleteCopy(ctx context.Context, cp *corev1.Secret) error {
	uid := cp.UID
	err := c.client.CoreV1().Secrets(cp.Namespace).Delete(ctx, cp.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting secret %s/%s: %w", cp.Namespace, cp.Name, err)
	}
	return nil
}
