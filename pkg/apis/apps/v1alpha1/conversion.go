package v1alpha1

import (
	"encoding/json"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Conversion between v1alpha1 and v1beta1 (the storage version) of the image
// kinds. The two versions have the same fields except one: v1beta1's
// NodeImage pull-secret reference has a "mode" that v1alpha1 lacks. Going to
// v1alpha1, the modes are kept in the PullSecretModesAnnotation so that a
// round trip loses nothing; coming back, they are restored and the annotation
// is dropped.
//
// These functions are what a conversion webhook would call. The CRDs
// themselves ship with conversion strategy None, like OpenKruise's, under
// which the API server only rewrites apiVersion (see docs/api.md).

// PullSecretModesAnnotation holds, on a v1alpha1 NodeImage converted from
// v1beta1, a JSON object mapping an image name to the list of its pull-secret
// modes, in the order of spec.images[name].pullSecrets. Only images with at
// least one non-empty mode are listed.
const PullSecretModesAnnotation = "apps.kruise.io/v1beta1-pull-secret-modes"

// ImagePullJobToV1beta1 converts a v1alpha1 ImagePullJob to v1beta1. The
// result shares no memory with in.
func ImagePullJobToV1beta1(in *ImagePullJob) *v1beta1.ImagePullJob {
	c := in.DeepCopy()
	out := &v1beta1.ImagePullJob{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "ImagePullJob"
	out.Spec = v1beta1.ImagePullJobSpec{Image: c.Spec.Image, ImagePullJobTemplate: templateToV1beta1(c.Spec.ImagePullJobTemplate)}
	out.Status = v1beta1.ImagePullJobStatus{
		StartTime: c.Status.StartTime, CompletionTime: c.Status.CompletionTime,
		Desired: c.Status.Desired, Active: c.Status.Active, Succeeded: c.Status.Succeeded, Failed: c.Status.Failed,
		Message: c.Status.Message, FailedNodes: c.Status.FailedNodes, OmittedFailures: c.Status.OmittedFailures,
	}
	if c.Status.Failures != nil {
		out.Status.Failures = make([]v1beta1.NodeFailure, len(c.Status.Failures))
		for i, f := range c.Status.Failures {
			out.Status.Failures[i] = v1beta1.NodeFailure(f)
		}
	}
	return out
}

// ImagePullJobFromV1beta1 converts a v1beta1 ImagePullJob to v1alpha1. The
// result shares no memory with in.
func ImagePullJobFromV1beta1(in *v1beta1.ImagePullJob) *ImagePullJob {
	c := in.DeepCopy()
	out := &ImagePullJob{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "ImagePullJob"
	out.Spec = ImagePullJobSpec{Image: c.Spec.Image, ImagePullJobTemplate: templateFromV1beta1(c.Spec.ImagePullJobTemplate)}
	out.Status = ImagePullJobStatus{
		StartTime: c.Status.StartTime, CompletionTime: c.Status.CompletionTime,
		Desired: c.Status.Desired, Active: c.Status.Active, Succeeded: c.Status.Succeeded, Failed: c.Status.Failed,
		Message: c.Status.Message, FailedNodes: c.Status.FailedNodes, OmittedFailures: c.Status.OmittedFailures,
	}
	if c.Status.Failures != nil {
		out.Status.Failures = make([]NodeFailure, len(c.Status.Failures))
		for i, f := range c.Status.Failures {
			out.Status.Failures[i] = NodeFailure(f)
		}
	}
	return out
}

// ImageListPullJobToV1beta1 converts a v1alpha1 ImageListPullJob to v1beta1.
func ImageListPullJobToV1beta1(in *ImageListPullJob) *v1beta1.ImageListPullJob {
	c := in.DeepCopy()
	out := &v1beta1.ImageListPullJob{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "ImageListPullJob"
	out.Spec = v1beta1.ImageListPullJobSpec{Images: c.Spec.Images, ImagePullJobTemplate: templateToV1beta1(c.Spec.ImagePullJobTemplate)}
	out.Status = v1beta1.ImageListPullJobStatus{
		StartTime:      c.Status.StartTime,
		CompletionTime: c.Status.CompletionTime,
		Desired:        c.Status.Desired,
		Active:         c.Status.Active,
		Completed:      c.Status.Completed,
		Succeeded:      c.Status.Succeeded,
	}
	if c.Status.FailedImageStatuses != nil {
		out.Status.FailedImageStatuses = make([]*v1beta1.FailedImageStatus, len(c.Status.FailedImageStatuses))
		for i, s := range c.Status.FailedImageStatuses {
			if s != nil {
				out.Status.FailedImageStatuses[i] = (*v1beta1.FailedImageStatus)(s)
			}
		}
	}
	return out
}

// ImageListPullJobFromV1beta1 converts a v1beta1 ImageListPullJob to v1alpha1.
func ImageListPullJobFromV1beta1(in *v1beta1.ImageListPullJob) *ImageListPullJob {
	c := in.DeepCopy()
	out := &ImageListPullJob{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "ImageListPullJob"
	out.Spec = ImageListPullJobSpec{Images: c.Spec.Images, ImagePullJobTemplate: templateFromV1beta1(c.Spec.ImagePullJobTemplate)}
	out.Status = ImageListPullJobStatus{
		StartTime:      c.Status.StartTime,
		CompletionTime: c.Status.CompletionTime,
		Desired:        c.Status.Desired,
		Active:         c.Status.Active,
		Completed:      c.Status.Completed,
		Succeeded:      c.Status.Succeeded,
	}
	if c.Status.FailedImageStatuses != nil {
		out.Status.FailedImageStatuses = make([]*FailedImageStatus, len(c.Status.FailedImageStatuses))
		for i, s := range c.Status.FailedImageStatuses {
			if s != nil {
				out.Status.FailedImageStatuses[i] = (*FailedImageStatus)(s)
			}
		}
	}
	return out
}

func templateToV1beta1(in ImagePullJobTemplate) v1beta1.ImagePullJobTemplate {
	return v1beta1.ImagePullJobTemplate{
		PullSecrets:      in.PullSecrets,
		Selector:         (*v1beta1.ImagePullJobNodeSelector)(in.Selector),
		PodSelector:      (*v1beta1.ImagePullJobPodSelector)(in.PodSelector),
		Parallelism:      in.Parallelism,
		PullPolicy:       (*v1beta1.PullPolicy)(in.PullPolicy),
		CompletionPolicy: v1beta1.CompletionPolicy{Type: v1beta1.CompletionPolicyType(in.CompletionPolicy.Type), ActiveDeadlineSeconds: in.CompletionPolicy.ActiveDeadlineSeconds, TTLSecondsAfterFinished: in.CompletionPolicy.TTLSecondsAfterFinished},
		SandboxConfig:    (*v1beta1.SandboxConfig)(in.SandboxConfig),
		ImagePullPolicy:  v1beta1.ImagePullPolicy(in.ImagePullPolicy),
	}
}

func templateFromV1beta1(in v1beta1.ImagePullJobTemplate) ImagePullJobTemplate {
	return ImagePullJobTemplate{
		PullSecrets:      in.PullSecrets,
		Selector:         (*ImagePullJobNodeSelector)(in.Selector),
		PodSelector:      (*ImagePullJobPodSelector)(in.PodSelector),
		Parallelism:      in.Parallelism,
		PullPolicy:       (*PullPolicy)(in.PullPolicy),
		CompletionPolicy: CompletionPolicy{Type: CompletionPolicyType(in.CompletionPolicy.Type), ActiveDeadlineSeconds: in.CompletionPolicy.ActiveDeadlineSeconds, TTLSecondsAfterFinished: in.CompletionPolicy.TTLSecondsAfterFinished},
		SandboxConfig:    (*SandboxConfig)(in.SandboxConfig),
		ImagePullPolicy:  ImagePullPolicy(in.ImagePullPolicy),
	}
}

// NodeImageToV1beta1 converts a v1alpha1 NodeImage to v1beta1, restoring the
// pull-secret modes kept in PullSecretModesAnnotation (and dropping it).
func NodeImageToV1beta1(in *NodeImage) *v1beta1.NodeImage {
	c := in.DeepCopy()
	var modes map[string][]string
	if raw, ok := c.Annotations[PullSecretModesAnnotation]; ok {
		// A value that does not parse was not written by us; it is dropped
		// (whatever json.Unmarshal filled in before it gave up).
		if json.Unmarshal([]byte(raw), &modes) != nil {
			modes = nil
		}
		delete(c.Annotations, PullSecretModesAnnotation)
		if len(c.Annotations) == 0 {
			c.Annotations = nil
		}
	}

	out := &v1beta1.NodeImage{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "NodeImage"
	if c.Spec.Images != nil {
		out.Spec.Images = make(map[string]v1beta1.ImageSpec, len(c.Spec.Images))
		for name, img := range c.Spec.Images {
			o := v1beta1.ImageSpec{SandboxConfig: (*v1beta1.SandboxConfig)(img.SandboxConfig)}
			if img.PullSecrets != nil {
				o.PullSecrets = make([]v1beta1.ReferenceObject, len(img.PullSecrets))
				for i, s := range img.PullSecrets {
					o.PullSecrets[i] = v1beta1.ReferenceObject{Namespace: s.Namespace, Name: s.Name}
					if m := modes[name]; i < len(m) {
						o.PullSecrets[i].Mode = m[i]
					}
				}
			}
			if img.Tags != nil {
				o.Tags = make([]v1beta1.ImageTagSpec, len(img.Tags))
				for i, t := range img.Tags {
					o.Tags[i] = v1beta1.ImageTagSpec{
						Tag:             t.Tag,
						CreatedAt:       t.CreatedAt,
						PullPolicy:      (*v1beta1.ImageTagPullPolicy)(t.PullPolicy),
						OwnerReferences: t.OwnerReferences,
						Version:         t.Version,
						ImagePullPolicy: v1beta1.ImagePullPolicy(t.ImagePullPolicy),
					}
				}
			}
			out.Spec.Images[name] = o
		}
	}
	out.Status = v1beta1.NodeImageStatus{
		Desired:   c.Status.Desired,
		Succeeded: c.Status.Succeeded,
		Failed:    c.Status.Failed,
		Pulling:   c.Status.Pulling,
		Waiting:   c.Status.Waiting,
	}
	if c.Status.ImageStatuses != nil {
		out.Status.ImageStatuses = make(map[string]v1beta1.ImageStatus, len(c.Status.ImageStatuses))
		for name, st := range c.Status.ImageStatuses {
			o := v1beta1.ImageStatus{}
			if st.Tags != nil {
				o.Tags = make([]v1beta1.ImageTagStatus, len(st.Tags))
				for i, t := range st.Tags {
					o.Tags[i] = v1beta1.ImageTagStatus{
						Tag: t.Tag, Phase: v1beta1.ImagePullPhase(t.Phase), Progress: t.Progress,
						StartTime: t.StartTime, CompletionTime: t.CompletionTime,
						Version: t.Version, ImageID: t.ImageID, Message: t.Message,
					}
				}
			}
			out.Status.ImageStatuses[name] = o
		}
	}
	if s := c.Status.FirstSyncStatus; s != nil {
		out.Status.FirstSyncStatus = &v1beta1.SyncStatus{SyncAt: s.SyncAt, Status: v1beta1.SyncStatusPhase(s.Status), Message: s.Message}
	}
	return out
}

// NodeImageFromV1beta1 converts a v1beta1 NodeImage to v1alpha1, keeping any
// non-empty pull-secret modes in PullSecretModesAnnotation.
func NodeImageFromV1beta1(in *v1beta1.NodeImage) *NodeImage {
	c := in.DeepCopy()
	out := &NodeImage{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "NodeImage"
	modes := map[string][]string{}
	if c.Spec.Images != nil {
		out.Spec.Images = make(map[string]ImageSpec, len(c.Spec.Images))
		for name, img := range c.Spec.Images {
			o := ImageSpec{SandboxConfig: (*SandboxConfig)(img.SandboxConfig)}
			if img.PullSecrets != nil {
				o.PullSecrets = make([]ReferenceObject, len(img.PullSecrets))
				keep := false
				m := make([]string, len(img.PullSecrets))
				for i, s := range img.PullSecrets {
					o.PullSecrets[i] = ReferenceObject{Namespace: s.Namespace, Name: s.Name}
					m[i] = s.Mode
					keep = keep || s.Mode != ""
				}
				if keep {
					modes[name] = m
				}
			}
			if img.Tags != nil {
				o.Tags = make([]ImageTagSpec, len(img.Tags))
				for i, t := range img.Tags {
					o.Tags[i] = ImageTagSpec{
						Tag:             t.Tag,
						CreatedAt:       t.CreatedAt,
						PullPolicy:      (*ImageTagPullPolicy)(t.PullPolicy),
						OwnerReferences: t.OwnerReferences,
						Version:         t.Version,
						ImagePullPolicy: ImagePullPolicy(t.ImagePullPolicy),
					}
				}
			}
			out.Spec.Images[name] = o
		}
	}
	if len(modes) > 0 {
		raw, _ := json.Marshal(modes) // a map of string slices always marshals
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[PullSecretModesAnnotation] = string(raw)
	}
	out.Status = NodeImageStatus{
		Desired:   c.Status.Desired,
		Succeeded: c.Status.Succeeded,
		Failed:    c.Status.Failed,
		Pulling:   c.Status.Pulling,
		Waiting:   c.Status.Waiting,
	}
	if c.Status.ImageStatuses != nil {
		out.Status.ImageStatuses = make(map[string]ImageStatus, len(c.Status.ImageStatuses))
		for name, st := range c.Status.ImageStatuses {
			o := ImageStatus{}
			if st.Tags != nil {
				o.Tags = make([]ImageTagStatus, len(st.Tags))
				for i, t := range st.Tags {
					o.Tags[i] = ImageTagStatus{
						Tag: t.Tag, Phase: ImagePullPhase(t.Phase), Progress: t.Progress,
						StartTime: t.StartTime, CompletionTime: t.CompletionTime,
						Version: t.Version, ImageID: t.ImageID, Message: t.Message,
					}
				}
			}
			out.Status.ImageStatuses[name] = o
		}
	}
	if s := c.Status.FirstSyncStatus; s != nil {
		out.Status.FirstSyncStatus = &SyncStatus{SyncAt: s.SyncAt, Status: SyncStatusPhase(s.Status), Message: s.Message}
	}
	return out
}
