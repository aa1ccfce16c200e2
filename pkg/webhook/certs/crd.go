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

// releasedAt returns the time of a reset of crd's conversion, or of a
// set-up for external certificates (SetupConversion), that happened after
// this Manager was created, and which of the two it was. Either means that
// this replica is on its way out (kruise is being uninstalled, or replaced by
// replicas with external certificates): it leaves the CRD alone.
func (m *Manager) releasedAt(crd *apiextensionsv1.CustomResourceDefinition) (time.Time, string, bool) {
	for _, key := range []string{ConversionResetAnnotation, ConversionSetupAnnotation} {
		v, ok := crd.Annotations[key]
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || at.Before(m.started) {
			continue
		}
		return at, key, true
	}
	return time.Time{}, "", false
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
	if at, key, ok := m.releasedAt(crd); ok {
		klog.FromContext(ctx).V(2).Info("CRD conversion was reset or set up for external certificates after this replica started: left alone",
			"crd", name, "annotation", key, "at", at)
		c.ok(ref)
		return
	}
	stale := staleAnnotations(crd.Annotations)
	if injected := injectedBy(crd.Annotations, stale); injected != "" {
		m.checkInjectedCRD(ctx, crd, ref, s, c, injected)
		return
	}
	diffs := m.conversionDiffs(crd.Spec.Conversion, s.bundle)
	if len(diffs) == 0 && len(stale) == 0 {
		c.ok(ref)
		return
	}
	conversion := conversionBlock(m.cfg.Namespace, m.cfg.ServiceName, s.bundle)
	desired, err := json.Marshal(conversion)
	if err != nil {
		m.apiError(c, ref, "encoding the conversion patch: %v", err)
		return
	}
	annotations := map[string]any{}
	for _, k := range stale {
		annotations[k] = nil
	}
	// The resourceVersion read makes the patch fail rather than undo a
	// change made since (a reset-conversion racing with this check).
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": crd.ResourceVersion,
			"annotations":     annotations,
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
			m.event(ref, ReasonConversionConfigured, "removed annotations %s: a reset or an external-certificate set-up before this replica started is over",
				strings.Join(stale, ", "))
		default:
			m.event(ref, ReasonConversionConfigured, "set spec.conversion (%s) to kruise's conversion webhook with %s",
				strings.Join(diffs, "; "), m.secretCA())
		}
	}, func() error {
		_, err := crds.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
		return err
	})
}

// staleAnnotations returns the keys of the annotations on a CRD that a
// ModeManaged replica removes when it takes the CRD over: a reset's mark,
// and what a set-up for external certificates put there (cainjector's
// annotation would otherwise fight the replica over the caBundle).
func staleAnnotations(have map[string]string) []string {
	var keys []string
	for _, k := range []string{ConversionResetAnnotation, ConversionSetupAnnotation, ConversionAnnotationsAnnotation} {
		if _, ok := have[k]; ok {
			keys = append(keys, k)
		}
	}
	return append(keys, trackedAnnotations(have)...)
}

// What conversionDiffs says of a caBundle that is not the Secret's CA.
const (
	bundleEmpty   = "caBundle is empty"
	bundleDiffers = "caBundle differs from " + CACertKey + " of the Secret"
)

// conversionDiffs says how conv differs from what the Manager writes, nil
// when it does not.
func (m *Manager) conversionDiffs(conv *apiextensionsv1.CustomResourceConversion, bundle []byte) []string {
	diffs, complete := webhookConversionDiffs(conv, m.cfg.Namespace, m.cfg.ServiceName)
	if !complete {
		return diffs
	}
	if cc := conv.Webhook.ClientConfig; !bytes.Equal(cc.CABundle, bundle) {
		if len(cc.CABundle) == 0 {
			diffs = append(diffs, bundleEmpty)
		} else {
			diffs = append(diffs, bundleDiffers)
		}
	}
	return diffs
}

// webhookConversionDiffs says how conv differs from a webhook conversion
// calling /convert on namespace/service with review version v1, the
// caBundle aside; complete is false when conv has no clientConfig at all.
func webhookConversionDiffs(conv *apiextensionsv1.CustomResourceConversion, namespace, service string) (diffs []string, complete bool) {
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		return []string{"strategy is not Webhook"}, false
	}
	if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return []string{"no clientConfig"}, false
	}
	if !slices.Equal(conv.Webhook.ConversionReviewVersions, []string{"v1"}) {
		diffs = append(diffs, fmt.Sprintf("conversionReviewVersions %v, not [v1]", conv.Webhook.ConversionReviewVersions))
	}
	cc := conv.Webhook.ClientConfig
	if cc.URL != nil {
		diffs = append(diffs, "calls a URL")
	}
	if got, want := serviceString(cc.Service), fmt.Sprintf("%s/%s:%d%s", namespace, service, conversionPort, ConversionPath); got != want {
		diffs = append(diffs, fmt.Sprintf("service %s, not %s", got, want))
	}
	return diffs, true
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

// checkInjectedCRD verifies (ModeManaged) a CRD whose caBundle cainjector
// writes, as annotated by someone other than kruise's set-up: the conversion
// must call kruise's webhook, and its caBundle trust what is served.
func (m *Manager) checkInjectedCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, ref corev1.ObjectReference, s *served, c *check, injected string) {
	c.seen[refKey(ref)] = ref
	diffs, complete := webhookConversionDiffs(crd.Spec.Conversion, m.cfg.Namespace, m.cfg.ServiceName)
	if complete {
		if err := s.bundleTrusts(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, c.now); err != nil {
			diffs = append(diffs, err.Error())
		}
	}
	if len(diffs) > 0 {
		c.add(Problem{Object: ref, Reason: ReasonCABundleLeftToCAInjector,
			Message: "conversion webhook: " + strings.Join(diffs, "; ") + fmt.Sprintf(injectedHint, injected)})
		return
	}
	klog.FromContext(ctx).V(4).Info("CRD conversion left to cainjector trusts the serving certificate", "crd", crd.Name, "annotation", injected)
	c.ok(ref)
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
