// Package server is kruise-controller's HTTPS endpoint for the API server's
// webhooks: admission (AdmissionReview v1) on one path per webhook, and any
// other review handler (the CRD conversion endpoint) mounted by path.
//
// The serving certificate comes from the caller on every TLS handshake
// (Options.GetCertificate), so a renewed certificate is used by the next
// connection without a restart. An admission handler implements Admitter and
// answers with a Result: allowed, allowed with a JSON patch, denied with a
// reason the webhook declared (the label of the rejection metric), or an
// error. The server decodes and checks the review, echoes the request's UID,
// recovers a handler's panic as an error answer, bounds bodies and times,
// and records latency and outcome metrics per webhook.
//
// ReadyCheck is a /readyz check (pkg/process/healthz's Checker): it passes once the
// server serves and the caller's readiness (the certificate manager's)
// holds.
package server
