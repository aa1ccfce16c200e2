package framework

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Credentials of the loopback registry's protected prefixes (hack/lib.sh sets the same defaults).
type Credentials struct{ Username, Password string }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// BasicCredentials open repositories under basic/.
func BasicCredentials() Credentials {
	return Credentials{envOr("REGISTRY_USER", "kruise"), envOr("REGISTRY_BASIC_PASSWORD", "kruise-basic-pw")}
}

// TokenCredentials obtain bearer tokens for repositories under token/.
func TokenCredentials() Credentials {
	return Credentials{envOr("REGISTRY_USER", "kruise"), envOr("REGISTRY_TOKEN_PASSWORD", "kruise-token-pw")}
}

// CreatePullSecret creates a kubernetes.io/dockerconfigjson secret for the loopback registry.
func (f *Framework) CreatePullSecret(ctx context.Context, t testing.TB, namespace, name string, c Credentials) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
		f.Registry: map[string]string{"username": c.Username, "password": c.Password, "auth": auth},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pull secret %s/%s: %v", namespace, name, err)
	}
}
