package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestSetSecretDataCopies(t *testing.T) {
	data := map[string][]byte{"k": []byte("v")}
	s := Secret("s", SetSecretData(data))
	s.Data["k"][0] = 'x'
	assert.Equal(t, map[string][]byte{"k": []byte("v")}, data, "the caller's bytes are not shared")
	assert.Nil(t, Secret("s", SetSecretData(nil)).Data)
}

func TestPullSecretSetters(t *testing.T) {
	s := Secret("s", SetSecretDockerConfigJSON(`{"auths":{}}`))
	assert.Equal(t, corev1.SecretTypeDockerConfigJson, s.Type)
	assert.Equal(t, map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}, s.Data)
	s = Secret("s", SetSecretDockercfg(`{}`))
	assert.Equal(t, corev1.SecretTypeDockercfg, s.Type)
	assert.Equal(t, map[string][]byte{corev1.DockerConfigKey: []byte(`{}`)}, s.Data)
}

func TestSecretFromLeavesTheBaseAlone(t *testing.T) {
	base := Secret("s", SetSecretNamespace("team"), SetSecretDockercfg(`{}`))
	s := SecretFrom(base, SetSecretDockerConfigJSON(`{"auths":{}}`), SetSecretLabels(map[string]string{"a": "b"}))
	assert.Equal(t, "team", s.Namespace)
	assert.Equal(t, corev1.SecretTypeDockerConfigJson, s.Type)
	assert.Equal(t, map[string]string{"a": "b"}, s.Labels)
	assert.Equal(t, corev1.SecretTypeDockercfg, base.Type)
	assert.Equal(t, map[string][]byte{corev1.DockerConfigKey: []byte(`{}`)}, base.Data)
	assert.Nil(t, base.Labels)
}
