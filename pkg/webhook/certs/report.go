package certs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Event reasons. Problems are Warning Events on the object at fault,
// recorded when a problem appears or its message changes (not at every
// check); the rest are Normal.
const (
	// ReasonCertificateIssued: the Manager wrote a new CA or serving
	// certificate into the Secret (ModeManaged).
	ReasonCertificateIssued = "CertificateIssued"
	// ReasonCABundleInjected: the Manager wrote the CA into an object's
	// caBundle (ModeManaged).
	ReasonCABundleInjected = "CABundleInjected"
	// ReasonConversionConfigured: the Manager wrote a CRD's spec.conversion
	// (strategy Webhook calling /convert with the CA; ModeManaged).
	ReasonConversionConfigured = "ConversionWebhookConfigured"
	// ReasonCABundleOverwritten: an object's caBundle this process had
	// written was changed by someone else; it is restored (ModeManaged).
	ReasonCABundleOverwritten = "CABundleOverwritten"
	// ReasonProblemResolved: a problem reported earlier is gone.
	ReasonProblemResolved = "CertificateProblemResolved"

	// ReasonSecretNotFound: the Secret does not exist (ModeExternal).
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonCertificateInvalid: the Secret's certificates are missing,
	// unparsable, expired, of another CA or for another name (ModeExternal).
	ReasonCertificateInvalid = "CertificateInvalid"
	// ReasonObjectNotFound: a configured webhook configuration or CRD does
	// not exist.
	ReasonObjectNotFound = "ObjectNotFound"
	// ReasonNoClientConfig: a CRD's conversion strategy is Webhook but it
	// has no clientConfig to put the CA in.
	ReasonNoClientConfig = "ConversionClientConfigMissing"
	// ReasonCABundleMismatch: an object's caBundle does not trust the
	// serving certificate.
	ReasonCABundleMismatch = "CABundleMismatch"
	// ReasonSecretIssuedByCertManager: ModeManaged found the Secret issued
	// by cert-manager and leaves it alone.
	ReasonSecretIssuedByCertManager = "SecretIssuedByCertManager"
	// ReasonCABundleLeftToCAInjector: ModeManaged found an object annotated
	// for cert-manager's cainjector and leaves its caBundle alone; it is a
	// problem only when the caBundle does not trust the serving certificate.
	ReasonCABundleLeftToCAInjector = "CABundleLeftToCAInjector"
	// ReasonAPIError: reading or writing an object failed.
	ReasonAPIError = "APIError"
)

// Problem is one thing that keeps the Manager from being ready, on the
// object at fault.
type Problem struct {
	// Object is the object at fault; UID is empty when it does not exist.
	Object  corev1.ObjectReference
	Reason  string
	Message string
	// Transient: reported, but does not make the Manager unready: an API
	// call about Object failed, but Object was found fine less than a
	// resync period ago (a short API server hiccup must not take every
	// replica out), or a notice about Object that keeps nothing from
	// working (a Secret left to cert-manager while kruise still serves).
	Transient bool
}

// String names the object and what is wrong with it.
func (p Problem) String() string {
	return fmt.Sprintf("%s %s: %s", p.Object.Kind, refName(p.Object), p.Message)
}

func refName(r corev1.ObjectReference) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

func (p Problem) key() string {
	return refKey(p.Object) + "/" + p.Reason
}

func refKey(r corev1.ObjectReference) string {
	return r.Kind + "/" + refName(r)
}

func secretRef(namespace, name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Secret", APIVersion: "v1", Namespace: namespace, Name: name, UID: uid}
}

const admissionRegistrationV1 = "admissionregistration.k8s.io/v1"

func mutatingRef(name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "MutatingWebhookConfiguration", APIVersion: admissionRegistrationV1, Name: name, UID: uid}
}

func validatingRef(name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "ValidatingWebhookConfiguration", APIVersion: admissionRegistrationV1, Name: name, UID: uid}
}

func crdRef(name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1", Name: name, UID: uid}
}

// event records a Normal Event on ref.
func (m *Manager) event(ref corev1.ObjectReference, reason, format string, args ...any) {
	m.recorder.Eventf(&ref, corev1.EventTypeNormal, reason, format, args...)
}

// report logs and records the problems that are new or changed since the
// last check, and the resolution of those that are gone; seen holds the
// objects read in this check, by kind/name, to attach a resolution to the
// object as it exists now.
func (m *Manager) report(ctx context.Context, problems []Problem, seen map[string]corev1.ObjectReference) {
	logger := klog.FromContext(ctx)
	now := make(map[string]Problem, len(problems))
	for _, p := range problems {
		now[p.key()] = p
		if old, ok := m.reported[p.key()]; ok && old.Message == p.Message {
			logger.V(4).Info("Webhook certificate problem persists", "kind", p.Object.Kind, "object", klog.KRef(p.Object.Namespace, p.Object.Name), "reason", p.Reason, "problem", p.Message)
			continue
		}
		logger.Error(nil, "Webhook certificate problem", "kind", p.Object.Kind, "object", klog.KRef(p.Object.Namespace, p.Object.Name), "reason", p.Reason, "problem", p.Message)
		ref := p.Object
		m.recorder.Event(&ref, corev1.EventTypeWarning, p.Reason, p.Message)
	}
	for key, old := range m.reported {
		if _, ok := now[key]; ok {
			continue
		}
		logger.Info("Webhook certificate problem resolved", "kind", old.Object.Kind, "object", klog.KRef(old.Object.Namespace, old.Object.Name), "reason", old.Reason, "was", old.Message)
		ref := old.Object
		if p, ok := seen[refKey(old.Object)]; ok {
			ref = p
		}
		m.event(ref, ReasonProblemResolved, "resolved: %s", old.Message)
	}
	m.reported = now
}
