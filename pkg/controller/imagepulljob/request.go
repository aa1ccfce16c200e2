package imagepulljob

import (
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
)

// request is what a job contributes to a NodeImage tag and image.
type request struct {
	owner           corev1.ObjectReference
	created         time.Time
	pullPolicy      v1beta1.ImageTagPullPolicy
	imagePullPolicy v1beta1.ImagePullPolicy
	secrets         []v1beta1.ReferenceObject
	sandbox         *v1beta1.SandboxConfig
}

// Defaults of the request fields (the CRD defaults them too).
const (
	// DefaultTimeoutSeconds is the default of pullPolicy.timeoutSeconds.
	DefaultTimeoutSeconds = int32(600)
	defaultBackoffLimit   = int32(3)
)

// buildRequest is the job's contribution to a NodeImage; the pull secrets
// in unusable are left out (they are never copied for the daemon).
func buildRequest(job *v1beta1.ImagePullJob, unusable map[string]string) request {
	r := request{
		owner: corev1.ObjectReference{
			APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ImagePullJob",
			Namespace: job.Namespace, Name: job.Name, UID: job.UID,
		},
		created:         job.CreationTimestamp.Time,
		imagePullPolicy: v1beta1.PullIfNotPresent,
		pullPolicy: v1beta1.ImageTagPullPolicy{
			TimeoutSeconds: ptr.To(DefaultTimeoutSeconds),
			BackoffLimit:   ptr.To(defaultBackoffLimit),
		},
	}
	if pullsAlways(job) {
		r.imagePullPolicy = v1beta1.PullAlways
	}
	// The schema admits what OpenKruise admits, out-of-range values
	// included; the shared NodeImage gets them as they are read (the
	// daemon reads a tag's the same way): a timeout below 1 as the
	// default, a backoff limit below 0 as the default, a deadline below 1
	// as one that has passed, a ttl below 0 as 0.
	if pp := job.Spec.PullPolicy; pp != nil {
		if pp.TimeoutSeconds != nil && *pp.TimeoutSeconds > 0 {
			r.pullPolicy.TimeoutSeconds = ptr.To(*pp.TimeoutSeconds)
		}
		if pp.BackoffLimit != nil && *pp.BackoffLimit >= 0 {
			r.pullPolicy.BackoffLimit = ptr.To(*pp.BackoffLimit)
		}
	}
	if cp := job.Spec.CompletionPolicy; cp.Type != v1beta1.Never && cp.ActiveDeadlineSeconds != nil {
		ads := max(*cp.ActiveDeadlineSeconds, 1)
		r.pullPolicy.ActiveDeadlineSeconds = ptr.To(ads)
		if cp.TTLSecondsAfterFinished != nil {
			// The tag's ttl counts from the pull's end on that node, the
			// job's from the job's end: deadline + ttl after the pull ends
			// is never before the job itself is deleted, so the safety net
			// cannot remove a tag the running job still reads. Both are
			// capped first, so the sum cannot overflow.
			ttl := min(ads, math.MaxInt32) + int64(max(*cp.TTLSecondsAfterFinished, 0))
			r.pullPolicy.TTLSecondsAfterFinished = ptr.To(int32(min(ttl, math.MaxInt32)))
		}
	}
	for _, s := range job.Spec.PullSecrets {
		if _, bad := unusable[s]; !bad {
			r.secrets = append(r.secrets, copyRef(job.Namespace, s))
		}
	}
	sortRefs(r.secrets)
	if job.Spec.SandboxConfig != nil {
		r.sandbox = job.Spec.SandboxConfig.DeepCopy()
	}
	return r
}

// copyRef references the daemon-config copy of the pull secret ns/name
// (kept by pkg/controller/pullsecrets).
func copyRef(ns, name string) v1beta1.ReferenceObject { return pullsecrets.CopyRef(ns, name) }

func sortRefs(refs []v1beta1.ReferenceObject) {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Namespace != refs[j].Namespace {
			return refs[i].Namespace < refs[j].Namespace
		}
		return refs[i].Name < refs[j].Name
	})
}
