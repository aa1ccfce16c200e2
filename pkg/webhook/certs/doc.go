// Package certs keeps the webhook server's serving certificate and the CA
// bundle the API server uses to call it.
//
// Every kruise-controller replica runs one Manager (it is not leader-gated:
// admission must survive a failover). In ModeManaged the Manager keeps a
// self-signed CA and a serving certificate in Secret kruise-webhook-certs,
// with OpenKruise's key names, renews them well before they expire, and
// writes the CA into the caBundle of the webhook configurations; of the
// configured CRDs it writes the whole spec.conversion block (strategy
// Webhook calling /convert, with the CA), switching them over from strategy
// None. Replicas converge on one
// Secret through create-if-absent and resourceVersion preconditions: a
// replica adopts any valid Secret another one wrote and never overwrites it.
// In ModeExternal (feature gate EnableExternalCerts) the Secret is written by
// someone else (cert-manager: ca.crt, tls.crt, tls.key) and the caBundles by
// cainjector; the Manager patches nothing and only verifies.
//
// The webhook server serves GetCertificate, which always returns the newest
// certificate, so a renewal needs no restart; Check is its /readyz check:
// it passes only while the Manager holds a valid certificate and every
// configured object's caBundle trusts it.
//
// docs/design/webhook-certificates.md describes the design.
package certs
