package certs

// Names of the objects, as OpenKruise names them, so that its docs and an
// operator's manifests (a cert-manager Certificate, inject-ca-from
// annotations) apply unchanged.
const (
	// SecretName is the Secret holding the certificates.
	SecretName = "kruise-webhook-certs"
	// ServiceName is the Service in front of the webhook server.
	ServiceName = "kruise-webhook-service"
	// MutatingWebhookConfigurationName is the pod and CRD mutating webhooks'
	// configuration.
	MutatingWebhookConfigurationName = "kruise-mutating-webhook-configuration"
	// ValidatingWebhookConfigurationName is the validating webhooks'
	// configuration.
	ValidatingWebhookConfigurationName = "kruise-validating-webhook-configuration"
)

// Keys of the Secret in ModeManaged (OpenKruise's). The serving certificate
// and key are written twice, under their PEM names and their TLS names.
const (
	CAKeyKey      = "ca-key.pem"
	CACertKey     = "ca-cert.pem"
	ServerKeyKey  = "key.pem"
	ServerCertKey = "cert.pem"
	TLSKeyKey     = "tls.key"
	TLSCertKey    = "tls.crt"
)

// ExternalCAKey is the key of the CA in ModeExternal (cert-manager's); the
// serving certificate and key are TLSCertKey and TLSKeyKey.
const ExternalCAKey = "ca.crt"

// Mode says who writes the Secret and the caBundles.
type Mode string

const (
	// ModeManaged: the Manager writes the Secret and the caBundles.
	ModeManaged Mode = "Managed"
	// ModeExternal: someone else writes both (cert-manager and its
	// cainjector); the Manager reads and verifies.
	ModeExternal Mode = "External"
)

// DNSNames returns the names a serving certificate for service in namespace
// carries in ModeManaged: the short name, with the namespace, with .svc
// (the name the API server dials), and the cluster-local FQDN.
func DNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		ServiceHost(service, namespace),
		ServiceHost(service, namespace) + ".cluster.local",
	}
}

// ServiceHost is the name the API server verifies the serving certificate
// against when it calls a webhook through a Service reference.
func ServiceHost(service, namespace string) string {
	return service + "." + namespace + ".svc"
}
