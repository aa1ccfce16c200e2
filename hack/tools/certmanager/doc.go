// Command cert-manager-lite runs, as one host process against a kubeconfig, the parts of
// cert-manager v1.21.2 that a Certificate signed by a SelfSigned or CA Issuer needs: the issuer
// controllers, the certificate controllers (trigger, key manager, request manager, issuing,
// readiness, revision manager), the CertificateRequest approver and signers, and the cainjector
// for webhook configurations and CRDs.
//
// It exists for kruise's tests of external webhook certificates. cert-manager's own commands
// (cmd/controller, cmd/cainjector, cmd/webhook) are separate Go modules that the module proxy does
// not serve, while the library packages they wire together are in the main module
// github.com/cert-manager/cert-manager, which the proxy does serve; this command wires those
// packages itself. Not included: ACME, Vault, Venafi, the ingress/gateway shims, cert-manager's
// admission webhook (so no defaulting or validation of its objects at admission), leader
// election, and every metrics, health or profiling listener: the process binds no port.
//
// The module is separate from kruise's so that cert-manager's Kubernetes libraries do not move
// kruise's; hack/build-certmanager.sh builds it into the version-keyed cache.
package main
