// Package ejobrequester is the mutating webhooks that record who asked for an object acting with
// its requester's rights: EphemeralJobs (ejobaccess.RequesterAnnotation) and PodProbeMarkers
// (nodeprobe.RequesterAnnotation). At create, and at each update that changes the spec or the
// requester annotation, the requesting user is written in the kind's annotation, overwriting
// whatever the user wrote, so that the validating webhook and kruise-controller judge the object
// by its requester's own rights. For EphemeralJobs it also defaults each template container's
// imagePullPolicy and terminationMessagePolicy as the API server defaults a pod's (the template
// is schemaless, and OpenKruise's rules require both).
//
// Both configurations' failurePolicy is Fail and not configurable: were one skipped, a user could
// write the annotation naming someone else.
package ejobrequester

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/imageref"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served, in OpenKruise's style of paths.
	Path = "/mutate-apps-kruise-io-v1alpha1-ephemeraljob"
	// Name names it in the webhook server's metrics and logs.
	Name = "ephemeraljob-mutate"

	// PodProbeMarkerPath is where the PodProbeMarker requester webhook is served.
	PodProbeMarkerPath = "/mutate-apps-kruise-io-v1alpha1-podprobemarker"
	// PodProbeMarkerName names it in the webhook server's metrics and logs.
	PodProbeMarkerName = "podprobemarker-mutate"
)

// Webhook is the EphemeralJob mutating webhook.
func Webhook() server.Webhook {
	return server.Webhook{Name: Name, Path: Path, Admitter: server.AdmitFunc(admit)}
}

func admit(_ context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != appsv1alpha1.GroupName || req.Resource.Resource != "ephemeraljobs" {
		return server.Allowed()
	}
	job := &appsv1alpha1.EphemeralJob{}
	if err := json.Unmarshal(req.Object.Raw, job); err != nil {
		// Never admitted unstamped: the controller would act on no pod, and the user should know.
		return server.Errored(fmt.Errorf("decoding the EphemeralJob: %w", err))
	}
	body, err := json.Marshal(Patch(job, ejobaccess.FromUserInfo(req.UserInfo)))
	if err != nil {
		return server.Errored(fmt.Errorf("encoding the patch: %w", err))
	}
	return server.Patched(body)
}

// PodProbeMarkerWebhook is the PodProbeMarker mutating webhook: it records the requester in
// nodeprobe.RequesterAnnotation, whose rights kruise-controller's exec gate and the validating
// webhook judge the marker's exec probes by.
func PodProbeMarkerWebhook() server.Webhook {
	return server.Webhook{Name: PodProbeMarkerName, Path: PodProbeMarkerPath, Admitter: server.AdmitFunc(admitPodProbeMarker)}
}

func admitPodProbeMarker(_ context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != appsv1alpha1.GroupName || req.Resource.Resource != "podprobemarkers" {
		return server.Allowed()
	}
	// Only the metadata is read: a marker whose spec does not decode is the validating webhook's
	// to refuse, and is stamped all the same.
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return server.Errored(fmt.Errorf("decoding the PodProbeMarker: %w", err))
	}
	body, err := json.Marshal([]op{stamp(obj.Metadata.Annotations, nodeprobe.RequesterAnnotation, ejobaccess.FromUserInfo(req.UserInfo))})
	if err != nil {
		return server.Errored(fmt.Errorf("encoding the patch: %w", err))
	}
	return server.Patched(body)
}

// stamp is the patch operation that writes r in the annotation key, replacing what is there.
func stamp(annotations map[string]string, key string, r ejobaccess.Requester) op {
	if annotations == nil {
		return op{"add", "/metadata/annotations", map[string]string{key: r.Encode()}}
	}
	// "add" replaces a value already there.
	return op{"add", "/metadata/annotations/" + escape(key), r.Encode()}
}

// op is one JSON patch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Patch is the JSON patch that stamps r on job and defaults its containers.
func Patch(job *appsv1alpha1.EphemeralJob, r ejobaccess.Requester) []op {
	ops := []op{stamp(job.Annotations, ejobaccess.RequesterAnnotation, r)}
	for i, c := range job.Spec.Template.EphemeralContainers {
		at := fmt.Sprintf("/spec/template/ephemeralContainers/%d/", i)
		if c.ImagePullPolicy == "" && c.Image != "" {
			ops = append(ops, op{"add", at + "imagePullPolicy", PullPolicyFor(c.Image)})
		}
		if c.TerminationMessagePolicy == "" {
			ops = append(ops, op{"add", at + "terminationMessagePolicy", corev1.TerminationMessageReadFile})
		}
	}
	return ops
}

// PullPolicyFor is the API server's default: Always for the tag latest (or none), IfNotPresent
// otherwise.
func PullPolicyFor(image string) corev1.PullPolicy {
	if _, tag, err := imageref.Split(image); err == nil && tag != imageref.DefaultTag {
		return corev1.PullIfNotPresent
	}
	return corev1.PullAlways
}

// escape is a JSON pointer's escaping of one path element.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
