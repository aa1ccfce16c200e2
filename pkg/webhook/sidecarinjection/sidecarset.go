package sidecarinjection

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// SidecarSetPath is where the SidecarSet defaulting webhook is served (OpenKruise's path);
// SidecarSetWebhookName names it in metrics and logs.
const (
	SidecarSetPath        = "/mutate-apps-kruise-io-sidecarset"
	SidecarSetWebhookName = "sidecarset-default"
)

// SidecarSetWebhook writes, at a SidecarSet's create and update, what OpenKruise's SidecarSet
// webhook writes and the schema cannot: each container's podInjectPolicy
// (sidecarset.DefaultInjectPolicies) and the SidecarSet's hash annotations
// (sidecarset.SetHashAnnotations), so that both are in the create response. The SidecarSet
// controller writes the annotations too, for SidecarSets admitted without this webhook.
func SidecarSetWebhook() server.Webhook {
	return server.Webhook{Name: SidecarSetWebhookName, Path: SidecarSetPath, Admitter: server.AdmitFunc(admitSidecarSet),
		Reasons: []string{ReasonBadRequest}}
}

func admitSidecarSet(_ context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Resource.Resource != "sidecarsets" || req.SubResource != "" ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return server.Allowed()
	}
	// The configuration sends every version as v1beta1 (matchPolicy Equivalent).
	if req.Kind.Version != appsv1beta1.SchemeGroupVersion.Version {
		return server.Result{Reason: ReasonBadRequest, Message: fmt.Sprintf("SidecarSet %s sent as %s: send it as v1beta1 (matchPolicy: Equivalent)", req.Name, req.Kind.Version), Code: http.StatusBadRequest}
	}
	ss := &appsv1beta1.SidecarSet{}
	if err := json.Unmarshal(req.Object.Raw, ss); err != nil {
		return server.Result{Reason: ReasonBadRequest, Message: fmt.Sprintf("decoding the SidecarSet: %v", err), Code: http.StatusBadRequest}
	}
	var old *appsv1beta1.SidecarSet
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old = &appsv1beta1.SidecarSet{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return server.Result{Reason: ReasonBadRequest, Message: fmt.Sprintf("decoding the stored SidecarSet: %v", err), Code: http.StatusBadRequest}
		}
	}
	patch, err := sidecarSetPatch(ss, old)
	if err != nil {
		return server.Errored(err)
	}
	if patch == nil {
		return server.Allowed()
	}
	return server.Patched(patch)
}

// sidecarSetPatch is the JSON patch that defaults ss and records its hashes; nil when there is
// nothing to change.
func sidecarSetPatch(ss, old *appsv1beta1.SidecarSet) ([]byte, error) {
	before := ss.DeepCopy()
	sidecarrules.DefaultInjectPolicies(ss, old)
	if _, err := sidecarrules.SetHashAnnotations(ss); err != nil {
		return nil, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
	}
	var ops []operation
	policies := func(list string, was, now []appsv1beta1.SidecarContainer) {
		for i := range now {
			if was[i].PodInjectPolicy != now[i].PodInjectPolicy {
				ops = append(ops, operation{Op: "add", Path: "/spec/" + list + "/" + strconv.Itoa(i) + "/podInjectPolicy", Value: now[i].PodInjectPolicy})
			}
		}
	}
	policies("containers", before.Spec.Containers, ss.Spec.Containers)
	policies("initContainers", before.Spec.InitContainers, ss.Spec.InitContainers)
	if before.Annotations == nil {
		if len(ss.Annotations) > 0 {
			ops = append(ops, operation{Op: "add", Path: "/metadata/annotations", Value: ss.Annotations})
		}
	} else {
		for _, key := range []string{sidecarrules.HashAnnotation, sidecarrules.HashWithoutImageAnnotation} {
			if before.Annotations[key] != ss.Annotations[key] {
				ops = append(ops, operation{Op: "add", Path: "/metadata/annotations/" + escapePointer(key), Value: ss.Annotations[key]})
			}
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the SidecarSet patch: %w", err)
	}
	return raw, nil
}

// escapePointer escapes a key as a JSON pointer segment (RFC 6901).
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
