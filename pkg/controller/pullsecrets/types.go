package pullsecrets

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ReasonInvalidPullSecret: a secret in spec.pullSecrets is not a registry
// credential (its type is not kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg, or it lacks the key its type requires). It is
// not copied, so kruise-daemon never sees it.
const ReasonInvalidPullSecret = "InvalidPullSecret"

// Unusable says why a secret cannot be passed to kruise-daemon as a pull
// secret, or "" when it can. Only the two docker config types are registry
// credentials: copying any other secret named by a job into the namespace
// every node's daemon reads would hand, say, a service-account token or a
// TLS key to all nodes on behalf of a user who may create ImagePullJobs
// but not read secrets.
func Unusable(s *corev1.Secret) string {
	var key string
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		key = corev1.DockerConfigJsonKey
	case corev1.SecretTypeDockercfg:
		key = corev1.DockerConfigKey
	default:
		typ := string(s.Type)
		if typ == "" {
			typ = string(corev1.SecretTypeOpaque)
		}
		return fmt.Sprintf("its type is %s, not %s or %s", typ, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
	if len(s.Data[key]) == 0 {
		return fmt.Sprintf("its type is %s but it has no %s key", s.Type, key)
	}
	return ""
}
