package gen

import (
	"bytes"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SecretModifier changes a Secret.
type SecretModifier func(*corev1.Secret)

// Secret is a Secret named name, changed by mods in order.
func Secret(name string, mods ...SecretModifier) *corev1.Secret {
	return apply(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// SecretFrom is a copy of s changed by mods; s is left as it was.
func SecretFrom(s *corev1.Secret, mods ...SecretModifier) *corev1.Secret {
	return apply(s.DeepCopy(), mods)
}

func SetSecretNamespace(ns string) SecretModifier {
	return func(s *corev1.Secret) { s.Namespace = ns }
}

func SetSecretUID(uid types.UID) SecretModifier { return func(s *corev1.Secret) { s.UID = uid } }

func SetSecretResourceVersion(rv string) SecretModifier {
	return func(s *corev1.Secret) { s.ResourceVersion = rv }
}

// SetSecretLabels replaces the secret's labels with a copy of labels.
func SetSecretLabels(labels map[string]string) SecretModifier {
	return func(s *corev1.Secret) { s.Labels = maps.Clone(labels) }
}

// SetSecretAnnotations replaces the secret's annotations with a copy of
// annotations.
func SetSecretAnnotations(annotations map[string]string) SecretModifier {
	return func(s *corev1.Secret) { s.Annotations = maps.Clone(annotations) }
}

func SetSecretType(t corev1.SecretType) SecretModifier { return func(s *corev1.Secret) { s.Type = t } }

// SetSecretData replaces the secret's data with a deep copy of data.
func SetSecretData(data map[string][]byte) SecretModifier {
	return func(s *corev1.Secret) {
		s.Data = nil
		if data != nil {
			s.Data = make(map[string][]byte, len(data))
		}
		for k, v := range data {
			s.Data[k] = bytes.Clone(v)
		}
	}
}

// SetSecretDockerConfigJSON makes the secret a kubernetes.io/dockerconfigjson
// pull secret holding config (a ~/.docker/config.json).
func SetSecretDockerConfigJSON(config string) SecretModifier {
	return func(s *corev1.Secret) {
		s.Type = corev1.SecretTypeDockerConfigJson
		s.Data = map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)}
	}
}

// SetSecretDockercfg makes the secret a kubernetes.io/dockercfg pull secret
// holding cfg (a legacy ~/.dockercfg).
func SetSecretDockercfg(cfg string) SecretModifier {
	return func(s *corev1.Secret) {
		s.Type = corev1.SecretTypeDockercfg
		s.Data = map[string][]byte{corev1.DockerConfigKey: []byte(cfg)}
	}
}
