package pullsecrets

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// notCredentials are secrets a job may name that are not registry
// credentials, with the reason given for each.
func notCredentials() map[string]struct {
	secret *corev1.Secret
	says   string
} {
	typed := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		s := source(secretName, dockerCfg)
		s.Type, s.Data = typ, data
		return s
	}
	return map[string]struct {
		secret *corev1.Secret
		says   string
	}{
		"service-account token": {typed(corev1.SecretTypeServiceAccountToken, map[string][]byte{"token": []byte("eyJ...")}),
			"its type is kubernetes.io/service-account-token, not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg"},
		"tls": {typed(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}),
			"its type is kubernetes.io/tls, not"},
		"opaque": {typed(corev1.SecretTypeOpaque, map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerCfg)}),
			"its type is Opaque, not"},
		"no type": {typed("", map[string][]byte{"x": []byte("y")}), "its type is Opaque, not"},
		"basic-auth": {typed(corev1.SecretTypeBasicAuth, map[string][]byte{"username": []byte("u"), "password": []byte("p")}),
			"its type is kubernetes.io/basic-auth, not"},
		"dockerconfigjson without its key": {typed(corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigKey: []byte(dockerCfg)}),
			"its type is kubernetes.io/dockerconfigjson but it has no .dockerconfigjson key"},
		"dockercfg without its key": {typed(corev1.SecretTypeDockercfg, map[string][]byte{}),
			"its type is kubernetes.io/dockercfg but it has no .dockercfg key"},
	}
}

func TestUnusable(t *testing.T) {
	for name, tc := range notCredentials() {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, Unusable(tc.secret), tc.says)
		})
	}
	assert.Empty(t, Unusable(source(secretName, dockerCfg)))
	cfg := source(secretName, dockerCfg)
	cfg.Type, cfg.Data = corev1.SecretTypeDockercfg, map[string][]byte{corev1.DockerConfigKey: []byte(`{}`)}
	assert.Empty(t, Unusable(cfg))
}

// A secret that is not a registry credential is never copied into the
// namespace every node's daemon reads; each job naming it is told why.
func TestSyncNotACredentialIsNotCopied(t *testing.T) {
	for name, tc := range notCredentials() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, objects{
				secrets: []*corev1.Secret{tc.secret},
				jobs: []*appsv1beta1.ImagePullJob{
					newJob("j1", secretName),
					newJob("j2", secretName, "other"),
					finishedJob("done", secretName),
				},
			})
			f.mustSync(t)
			assert.Empty(t, f.writes(), "nothing copied")
			assert.Nil(t, f.liveCopy(t, secretName))
			ev := f.events()
			require.Len(t, ev, 2, "one per unfinished job")
			for _, e := range ev {
				assert.Contains(t, e, "Warning "+ReasonInvalidPullSecret+" Pull secret regcred is not used: "+tc.says)
			}

			f.mustSync(t)
			assert.Empty(t, f.events(), "once per job per process")
		})
	}
}

// A copy of a secret that is not a registry credential, made by an earlier
// kruise (which copied any type) or before the source's type changed, is
// removed.
func TestSyncCopyOfNotACredentialIsDeleted(t *testing.T) {
	for name, tc := range notCredentials() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, objects{
				secrets: []*corev1.Secret{tc.secret, copyOf(tc.secret)},
				jobs:    []*appsv1beta1.ImagePullJob{newJob("j1", secretName)},
			})
			f.mustSync(t)
			assert.Equal(t, []string{"delete"}, f.verbs())
			assert.Equal(t, copyNS, f.writes()[0].GetNamespace())
			assert.Nil(t, f.liveCopy(t, secretName))
			assert.NotNil(t, f.liveSource(t), "the source is never touched")
			assert.Len(t, f.events(), 1)
		})
	}

	// The source was a registry credential when copied and is no more.
	src := source(secretName, dockerCfg)
	cp := copyOf(src)
	now := src.DeepCopy()
	now.Type = corev1.SecretTypeOpaque
	f := newFixture(t, objects{secrets: []*corev1.Secret{now, cp}, jobs: []*appsv1beta1.ImagePullJob{newJob("j1", secretName)}})
	f.mustSync(t)
	assert.Equal(t, []string{"delete"}, f.verbs())
	assert.Nil(t, f.liveCopy(t, secretName))
}
