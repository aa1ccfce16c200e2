package certs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ConversionPath is the path of the conversion webhook kruise serves and
// writes into the CRDs (pkg/webhook/conversion.Path).
const ConversionPath = "/convert"

// ConversionResetAnnotation is set on a CRD by ResetConversion (the Helm
// chart's pre-delete hook) to the time of the reset (RFC 3339, nanoseconds).
// A replica started before that time leaves the CRD's conversion alone, so
// that the replicas still running while kruise is uninstalled do not undo
// the reset; a replica started after it (kruise installed again) switches
// the CRD back to the webhook and removes the annotation.
const ConversionResetAnnotation = "apps.kruise.io/conversion-reset-at"

// releasedAt returns the time of a reset of crd's conversion that happened
// after this Manager was created.
func (m *Manager) releasedAt(crd *apiextensionsv1.CustomResourceDefinition) (time.Time, bool) {
	v, ok := crd.Annotations[ConversionResetAnnotation]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || at.Before(m.started) {
		return time.Time{}, false
	}
	return at, true
}

// conversionPort is the Service port the conversion webhook is called on.
const conversionPort int32 = 443

// syncCRD checks one configured CRD's conversion. In ModeManaged the
// Manager owns the whole spec.conversion block: strategy Webhook calling
// /convert on the webhook Service with the Secret's CA, written as one merge
// patch of spec.conversion alone when anything in it differs (so a CRD
// installed or re-applied with strategy None is switched over, and two
// replicas holding the same Secret write the same thing). In ModeExternal it
// only verifies the caBundle of a CRD that converts with a webhook.
func (m *Manager) syncCRD(ctx context.Context, name string, s *served, c *check) {
	crds := m.cfg.CRDClient.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	ref := crdRef(name, "")
	if apierrors.IsNotFound(err) {
		c.add(Problem{Object: ref, Reason: ReasonObjectNotFound, Message: "does not exist; its conversion webhook cannot be given the CA"})
		return
	}
	if err != nil {
		m.apiError(c, ref, "reading: %v", err)
		return
	}
	ref.UID = crd.UID
	if m.cfg.Mode == ModeExternal {
		m.checkExternalCRD(ctx, crd, ref, s, c)
		return
	}
	c.seen[refKey(ref)] = ref
	if at, ok := m.releasedAt(crd); ok {
		klog.FromContext(ctx).V(2).Info("CRD conversion was reset after this replica started (kruise is being uninstalled): left alone",
			"crd", name, "resetAt", at)
		c.ok(ref)
		return
	}
	diffs := m.conversionDiffs(crd.Spec.Conversion, s.bundle)
	_, annotated := crd.Annotations[ConversionResetAnnotation]
	if len(diffs) == 0 && !annotated {
		c.ok(ref)
		return
	}
	conversion := m.desiredConversion(s.bundle)
	desired, err := json.Marshal(conversion)
	if err != nil {
		m.apiError(c, ref, "encoding the conversion patch: %v", err)
		return
	}
	// The resourceVersion read makes the patch fail rather than undo a
	// change made since (a reset-conversion racing with this check).
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": crd.ResourceVersion,
			"annotations":     map[string]any{ConversionResetAnnotation: nil},
		},
		"spec": map[string]any{"conversion": conversion},
	})
	if err != nil {
		m.apiError(c, ref, "encoding the conversion patch: %v", err)
		return
	}
	was := "None"
	if conv := crd.Spec.Conversion; conv != nil && conv.Strategy != "" {
		was = string(conv.Strategy)
	}
	m.restore(ctx, c, ref, desired, "spec.conversion", "kruise's conversion webhook with "+m.secretCA(), func() {
		switch {
		case was != string(apiextensionsv1.WebhookConverter):
			m.event(ref, ReasonConversionConfigured, "switched spec.conversion from strategy %s to Webhook (Service %s/%s, path %s) with %s",
				was, m.cfg.Namespace, m.cfg.ServiceName, ConversionPath, m.secretCA())
		case len(diffs) == 1 && diffs[0] == bundleEmpty:
			m.event(ref, ReasonCABundleInjected, "wrote %s into the conversion webhook", m.secretCA())
		case len(diffs) == 1 && diffs[0] == bundleDiffers:
			m.event(ref, ReasonCABundleInjected, "replaced the caBundle of the conversion webhook with %s", m.secretCA())
		case len(diffs) == 0:
			m.event(ref, ReasonConversionConfigured, "removed annotation %s: a reset before this replica started is over", ConversionResetAnnotation)
		default:
			m.event(ref, ReasonConversionConfigured, "set spec.conversion (%s) to kruise's conversion webhook with %s",
				strings.Join(diffs, "; "), m.secretCA())
		}
	}, func() error {
		_, err := crds.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
		return err
	})
}

// desiredConversion is the spec.conversion block the Manager writes, as a
// JSON merge patch: url is cleared since it excludes service.
func (m *Manager) desiredConversion(bundle []byte) map[string]any {
	return map[string]any{
		"strategy": apiextensionsv1.WebhookConverter,
		"webhook": map[string]any{
			"conversionReviewVersions": []string{"v1"},
			"clientConfig": map[string]any{
				"url": nil,
				"service": map[string]any{
					"namespace": m.cfg.Namespace,
					"name":      m.cfg.ServiceName,
					"path":      ConversionPath,
					"port":      conversionPort,
				},
				"caBundle": bundle,
			},
		},
	}
}

// What conversionDiffs says of a caBundle that is not the Secret's CA.
const (
	bundleEmpty   = "caBundle is empty"
	bundleDiffers = "caBundle differs from " + CACertKey + " of the Secret"
)

// conversionDiffs says how conv differs from what the Manager writes, nil
// when it does not.
func (m *Manager) conversionDiffs(conv *apiextensionsv1.CustomResourceConversion, bundle []byte) []string {
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		return []string{"strategy is not Webhook"}
	}
	var diffs []string
	if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return []string{"no clientConfig"}
	}
	if !slices.Equal(conv.Webhook.ConversionReviewVersions, []string{"v1"}) {
		diffs = append(diffs, fmt.Sprintf("conversionReviewVersions %v, not [v1]", conv.Webhook.ConversionReviewVersions))
	}
	cc := conv.Webhook.ClientConfig
	if cc.URL != nil {
		diffs = append(diffs, "calls a URL")
	}
	want := fmt.Sprintf("%s/%s:%d%s", m.cfg.Namespace, m.cfg.ServiceName, conversionPort, ConversionPath)
	if got := serviceString(cc.Service); got != want {
		diffs = append(diffs, fmt.Sprintf("service %s, not %s", got, want))
	}
	if !bytes.Equal(cc.CABundle, bundle) {
		if len(cc.CABundle) == 0 {
			diffs = append(diffs, bundleEmpty)
		} else {
			diffs = append(diffs, bundleDiffers)
		}
	}
	return diffs
}

// serviceString is "namespace/name:port/path" of a service reference, with
// the API server's defaults (port 443, path "/").
func serviceString(svc *apiextensionsv1.ServiceReference) string {
	if svc == nil {
		return "none"
	}
	port, path := conversionPort, "/"
	if svc.Port != nil {
		port = *svc.Port
	}
	if svc.Path != nil {
		path = *svc.Path
	}
	return fmt.Sprintf("%s/%s:%d%s", svc.Namespace, svc.Name, port, path)
}

// checkExternalCRD verifies (ModeExternal) the caBundle of a CRD that
// converts with a webhook; one converting with strategy None calls no
// webhook and is fine.
func (m *Manager) checkExternalCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, ref corev1.ObjectReference, s *served, c *check) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		klog.FromContext(ctx).V(4).Info("CRD converts without a webhook, no caBundle to check", "crd", crd.Name)
		c.ok(ref)
		return
	}
	c.seen[refKey(ref)] = ref
	if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		c.add(Problem{Object: ref, Reason: ReasonNoClientConfig, Message: "conversion strategy is Webhook but spec.conversion.webhook.clientConfig is not set"})
		return
	}
	if err := m.bundleProblem(conv.Webhook.ClientConfig.CABundle, s, c.now); err != nil {
		c.add(Problem{Object: ref, Reason: ReasonCABundleMismatch, Message: "conversion webhook: " + err.Error() + externalHint})
		return
	}
	c.ok(ref)
}
