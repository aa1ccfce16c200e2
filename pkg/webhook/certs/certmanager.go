package certs

import (
	"slices"
)

// cert-manager's marks: on a Secret it issued, and on the objects whose
// caBundle its cainjector fills. With kruise's own certificates (ModeManaged)
// the Manager writes none of these objects: a Secret or caBundle with two
// writers would be fought over, each undoing the other (and cert-manager
// re-issuing at every undo). That happens when an install is switched
// between the two modes with a helm upgrade, while the replicas of the old
// mode are still running.
const (
	// CertManagerCertificateAnnotation is on a Secret cert-manager issued:
	// the name of its Certificate.
	CertManagerCertificateAnnotation = "cert-manager.io/certificate-name"
)

// cainjectorAnnotations are the annotations that make cainjector write an
// object's caBundle.
var cainjectorAnnotations = []string{
	"cert-manager.io/inject-ca-from",
	"cert-manager.io/inject-ca-from-secret",
	"cert-manager.io/inject-apiserver-ca",
}

// injectedBy returns the cainjector annotation of an object annotated
// annotations, other than those in ignore (kruise's set-up put them there
// and the Manager is about to remove them), or "".
func injectedBy(annotations map[string]string, ignore []string) string {
	for _, k := range cainjectorAnnotations {
		if _, ok := annotations[k]; ok && !slices.Contains(ignore, k) {
			return k + ": " + annotations[k]
		}
	}
	return ""
}

// injectedHint ends the message of a caBundle kruise leaves to cainjector.
const injectedHint = " (the object is annotated %s, so cainjector writes its caBundle and kruise, with its own certificates, " +
	"only checks it: remove the annotation for kruise to write it, or run with EnableExternalCerts (Helm externalCerts.enabled=true))"

// ownedSecretHint ends the message of a Secret kruise leaves to cert-manager.
const ownedSecretHint = "is issued by cert-manager (Certificate %s), so kruise, with its own certificates, does not write it: " +
	"run with EnableExternalCerts (Helm externalCerts.enabled=true), or delete the Certificate and then the Secret for kruise to issue its own"
