package certs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// Annotations SetupConversion keeps on a CRD besides the ones it is given.
const (
	// ConversionAnnotationsAnnotation lists (comma-separated, sorted) the
	// keys of the annotations SetupConversion put on the CRD, so that a
	// later setup, a reset or a ModeManaged replica removes exactly those
	// and never one somebody else set.
	ConversionAnnotationsAnnotation = "apps.kruise.io/conversion-annotations"
	// ConversionSetupAnnotation is the time (RFC 3339, nanoseconds) of the
	// last SetupConversion that changed the CRD. A ModeManaged replica
	// started before it is being replaced by replicas with external
	// certificates and leaves the CRD alone; one started after it (the
	// chart switched back to kruise's own certificates) takes the CRD over
	// and removes the setup's annotations.
	ConversionSetupAnnotation = "apps.kruise.io/conversion-setup-at"
)

// ConversionSetup is what SetupConversion writes: with external
// certificates kruise writes nothing itself, so the Helm chart runs this
// (kruise-controller setup-conversion) after each install and upgrade.
type ConversionSetup struct {
	// Namespace and Service name the webhook Service the CRDs call.
	Namespace, Service string
	// CRDs are the CRDs that convert through kruise's /convert.
	CRDs []string
	// Annotations are put on each CRD (cainjector's inject-ca-from, say);
	// those a previous setup put there and that are not here any more are
	// removed.
	Annotations map[string]string
	// CABundle, when not empty, is written into the conversion webhook (the
	// chart owns the CA: webhook.caBundle). When empty the caBundle is left
	// as it is, for cainjector to fill.
	CABundle []byte
}

// SetupConversion makes every CRD of setup convert through kruise's webhook
// Service and carry setup's annotations. A CRD already so is not written;
// any other is patched at the resourceVersion read (a concurrent change is
// never overwritten blindly: the CRD is read again and decided again). A CRD that does not exist is
// an error: the conversion it was meant to get would silently be missing.
// It returns the CRDs it changed.
func SetupConversion(ctx context.Context, client apiextensionsclient.Interface, setup ConversionSetup, now time.Time) ([]string, error) {
	for k := range setup.Annotations {
		if k == ConversionAnnotationsAnnotation || k == ConversionSetupAnnotation || k == ConversionResetAnnotation {
			return nil, fmt.Errorf("annotation %s is kruise's own bookkeeping and cannot be set", k)
		}
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var changed []string
	var errs []error
	for _, name := range setup.CRDs {
		// A conflict reads the CRD again and decides again (see ResetConversion).
		var done bool
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var err error
			done, err = setupOne(ctx, crds, name, setup, now)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done {
			changed = append(changed, name)
		}
	}
	return changed, errors.Join(errs...)
}

// conversionBlock is spec.conversion calling /convert on namespace/service,
// as a JSON merge patch: url is cleared since it excludes service, and the
// caBundle is written only when given (left for cainjector otherwise).
func conversionBlock(namespace, service string, bundle []byte) map[string]any {
	clientConfig := map[string]any{
		"url": nil,
		"service": map[string]any{
			"namespace": namespace,
			"name":      service,
			"path":      ConversionPath,
			"port":      conversionPort,
		},
	}
	if len(bundle) > 0 {
		clientConfig["caBundle"] = bundle
	}
	return map[string]any{
		"strategy": apiextensionsv1.WebhookConverter,
		"webhook": map[string]any{
			"conversionReviewVersions": []string{"v1"},
			"clientConfig":             clientConfig,
		},
	}
}

// setupAnnotations returns the annotations merge patch that puts want on a
// CRD annotated have (removing what an earlier setup put there and want no
// longer has, and a reset's mark), and what differs.
func setupAnnotations(have, want map[string]string) (map[string]any, []string) {
	patch := map[string]any{}
	var why []string
	for _, k := range trackedAnnotations(have) {
		if _, keep := want[k]; !keep {
			patch[k] = nil
			why = append(why, "annotation "+k+" removed")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		patch[k] = want[k]
		if v, ok := have[k]; !ok || v != want[k] {
			why = append(why, "annotation "+k+" set")
		}
	}
	list := strings.Join(slices.Sorted(maps.Keys(want)), ",")
	if list == "" {
		patch[ConversionAnnotationsAnnotation] = nil
	} else {
		patch[ConversionAnnotationsAnnotation] = list
	}
	if have[ConversionAnnotationsAnnotation] != list {
		why = append(why, "annotation "+ConversionAnnotationsAnnotation+" updated")
	}
	if _, ok := have[ConversionResetAnnotation]; ok {
		patch[ConversionResetAnnotation] = nil
		why = append(why, "annotation "+ConversionResetAnnotation+" removed")
	}
	return patch, why
}

// trackedAnnotations returns the keys of the annotations a setup put on a
// CRD annotated have.
func trackedAnnotations(have map[string]string) []string {
	var keys []string
	for k := range strings.SplitSeq(have[ConversionAnnotationsAnnotation], ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// setupConversionDiffs says how conv differs from what setup writes.
func setupConversionDiffs(conv *apiextensionsv1.CustomResourceConversion, setup ConversionSetup) []string {
	diffs, complete := webhookConversionDiffs(conv, setup.Namespace, setup.Service)
	if complete && len(setup.CABundle) > 0 && !bytes.Equal(conv.Webhook.ClientConfig.CABundle, setup.CABundle) {
		diffs = append(diffs, "caBundle differs from the one given")
	}
	return diffs
}

// setupOne sets up CRD name if it needs it, reporting whether it wrote.
func setupOne(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, name string, setup ConversionSetup, now time.Time) (bool, error) {
	logger := klog.FromContext(ctx)
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, fmt.Errorf("CRD %s does not exist: install kruise's CRDs first (helm installs them from crds/ unless --skip-crds)", name)
	}
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	annotations, why := setupAnnotations(crd.Annotations, setup.Annotations)
	why = append(why, setupConversionDiffs(crd.Spec.Conversion, setup)...)
	if len(why) == 0 {
		logger.Info("CRD already converts through kruise's webhook as set up", "crd", name)
		return false, nil
	}
	annotations[ConversionSetupAnnotation] = now.UTC().Format(time.RFC3339Nano)
	conversion := conversionBlock(setup.Namespace, setup.Service, setup.CABundle)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": crd.ResourceVersion, "annotations": annotations},
		"spec":     map[string]any{"conversion": conversion},
	})
	if err != nil {
		return false, fmt.Errorf("encoding the conversion set-up of CRD %s: %w", name, err)
	}
	if _, err := crds.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("setting CRD %s to convert through Service %s/%s: %w", name, setup.Namespace, setup.Service, err)
	}
	logger.Info("CRD set to convert through kruise's webhook", "crd", name,
		"service", klog.KRef(setup.Namespace, setup.Service), "changed", strings.Join(why, "; "))
	return true, nil
}
