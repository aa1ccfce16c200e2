package imagepulljob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// A pull secret that is not a registry credential is never copied for the
// daemon, so the NodeImage must not point at a copy of it; the job's
// message says which secret was left out and why.
func TestUnusablePullSecretLeftOutAndReported(t *testing.T) {
	good := gen.Secret("good", gen.SetSecretNamespace(testNS), gen.SetSecretDockerConfigJSON("{}"))
	token := gen.Secret("token", gen.SetSecretNamespace(testNS), gen.SetSecretType(corev1.SecretTypeServiceAccountToken),
		gen.SetSecretData(map[string][]byte{"token": []byte("t")}))
	job := newJob("j", image, gen.SetImagePullJobPullSecrets("good", "token", "missing"))
	f := newFixture(t, objects{
		jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
		secrets: []*corev1.Secret{good, token},
	})
	f.step(t, "j")

	assert.Equal(t, []v1beta1.ReferenceObject{copyRef(testNS, "good"), copyRef(testNS, "missing")},
		f.ni(t, "n1").Spec.Images[repo].PullSecrets,
		"a missing secret keeps its reference (its copy appears with it); a token never has a copy")
	assert.Equal(t, "0/1 nodes succeeded, 0 failed, 1 pulling; pull secret token not used: its type is "+
		"kubernetes.io/service-account-token, not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg",
		f.job(t, "j").Status.Message)

	// The secret becomes a registry credential: the job is queued, and
	// its request now names the copy.
	fixed := gen.SecretFrom(token, gen.SetSecretDockerConfigJSON("{}"))
	require.NoError(t, f.secrets.Update(fixed))
	f.drainJobs()
	f.ctrl.secretChanged(token, fixed)
	assert.Equal(t, map[string]bool{testNS + "/j": true}, f.drainJobs())
	f.step(t, "j")
	assert.Equal(t, []v1beta1.ReferenceObject{copyRef(testNS, "good"), copyRef(testNS, "missing"), copyRef(testNS, "token")},
		f.ni(t, "n1").Spec.Images[repo].PullSecrets)
	assert.Equal(t, "0/1 nodes succeeded, 0 failed, 1 pulling", f.job(t, "j").Status.Message)

	// Updates that change neither type nor data, and secrets no job
	// names, queue nothing.
	f.ctrl.secretChanged(fixed, gen.SecretFrom(fixed, gen.SetSecretLabels(map[string]string{"a": "b"})))
	f.ctrl.secretChanged(nil, gen.Secret("unrelated", gen.SetSecretNamespace(testNS), gen.SetSecretType(corev1.SecretTypeOpaque),
		gen.SetSecretData(map[string][]byte{})))
	assert.Empty(t, f.drainJobs())
}

// The completed job keeps the note: it explains an Unauthorized failure.
func TestUnusablePullSecretNoteOnCompletion(t *testing.T) {
	tls := gen.Secret("tls", gen.SetSecretNamespace(testNS), gen.SetSecretType(corev1.SecretTypeTLS),
		gen.SetSecretData(map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}))
	job := newJob("j", image, gen.SetImagePullJobPullSecrets("tls"))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}, secrets: []*corev1.Secret{tls}})
	f.step(t, "j")
	assert.Empty(t, f.ni(t, "n1").Spec.Images[repo].PullSecrets)
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.step(t, "j")
	assert.Equal(t, "Completed: 1/1 nodes succeeded, 0 failed, 0 pulling; pull secret tls not used: its type is kubernetes.io/tls, not "+
		"kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg", f.job(t, "j").Status.Message)
}

func TestSecretsNoteIsBounded(t *testing.T) {
	bad := map[string]string{"a": "x", "b": "x", "c": "x", "d": "x", "e": "x"}
	assert.Equal(t, "; pull secret a not used: x; pull secret b not used: x; pull secret c not used: x; 2 more pull secrets not used",
		secretsNote(bad, []string{"a", "ok", "b", "a", "c", "d", "e"}))
	assert.Empty(t, secretsNote(nil, []string{"a"}))
}
