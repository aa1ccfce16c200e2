// Package credentials finds registry credentials for an image the way the
// kubelet does: first the pull secrets given for the pull
// (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg), then exec
// credential-provider plugins configured with a kubelet CredentialProviderConfig
// file (kubelet.config.k8s.io/v1), and, when nothing matches, none
// (anonymous). Credentials never appear in logs, errors or Events.
package credentials
