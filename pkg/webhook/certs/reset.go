package certs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// ResetConversion turns the conversion of every named CRD that calls the
// webhook Service namespace/service back to strategy None, so that CRDs
// left behind when kruise is uninstalled do not call a Service that is gone
// (reads of the version not stored would fail), and removes the annotations
// SetupConversion put there (cainjector's, say). It sets
// ConversionResetAnnotation to now, so that the replicas still running do
// not switch it back. A CRD that does not exist, or converts with strategy
// None or through another webhook and carries no set-up annotations, is
// left alone. The
// patch carries the resourceVersion read, so a concurrent change is not
// overwritten blindly: the CRD is read again and the reset decided again.
// It returns the CRDs reset.
func ResetConversion(ctx context.Context, client apiextensionsclient.Interface, namespace, service string, names []string, now time.Time) ([]string, error) {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var reset []string
	var errs []error
	for _, name := range names {
		// A conflict (cainjector writing the caBundle, say) reads the CRD again and decides
		// again: the patch is never applied over a change it did not see.
		var done bool
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var err error
			done, err = resetOne(ctx, crds, name, namespace, service, now)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done {
			reset = append(reset, name)
		}
	}
	return reset, errors.Join(errs...)
}

// callsService: conv is a webhook conversion calling namespace/service.
func callsService(conv *apiextensionsv1.CustomResourceConversion, namespace, service string) bool {
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return false
	}
	svc := conv.Webhook.ClientConfig.Service
	return svc != nil && svc.Namespace == namespace && svc.Name == service
}

// resetOne resets CRD name if it needs it, reporting whether it wrote.
func resetOne(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, name, namespace, service string, now time.Time) (bool, error) {
	logger := klog.FromContext(ctx)
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		logger.Info("CRD not found, nothing to reset", "crd", name)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	calls := callsService(crd.Spec.Conversion, namespace, service)
	annotations := map[string]any{}
	for _, k := range staleAnnotations(crd.Annotations) {
		if k != ConversionResetAnnotation { // a reset's own mark is no reason to reset again
			annotations[k] = nil
		}
	}
	if !calls && len(annotations) == 0 {
		logger.Info("CRD does not convert through kruise's webhook, left alone", "crd", name)
		return false, nil
	}
	annotations[ConversionResetAnnotation] = now.UTC().Format(time.RFC3339Nano)
	p := map[string]any{"metadata": map[string]any{"resourceVersion": crd.ResourceVersion, "annotations": annotations}}
	if calls {
		p["spec"] = map[string]any{"conversion": map[string]any{"strategy": apiextensionsv1.NoneConverter, "webhook": nil}}
	}
	patch, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("encoding the reset of CRD %s: %w", name, err)
	}
	if _, err := crds.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("resetting the conversion of CRD %s to strategy None: %w", name, err)
	}
	logger.Info("CRD conversion reset to strategy None", "crd", name, "service", klog.KRef(namespace, service))
	return true, nil
}
