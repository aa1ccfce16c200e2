package credentials

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// dockerConfigJSONSecret is a dockerconfigjson pull secret in namespace
// ns whose "auths" are auths.
func dockerConfigJSONSecret(name, auths string) *corev1.Secret {
	return gen.Secret(name, gen.SetSecretNamespace("ns"), gen.SetSecretDockerConfigJSON(`{"auths":`+auths+`}`))
}

// dockercfgSecret is a dockercfg pull secret in namespace ns holding cfg.
func dockercfgSecret(name, cfg string) *corev1.Secret {
	return gen.Secret(name, gen.SetSecretNamespace("ns"), gen.SetSecretDockercfg(cfg))
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// userPass is a credential's identity in assertions: source and username.
func userPass(creds []Credential) []string {
	var out []string
	for _, c := range creds {
		// ServerAddress must stay empty: containerd drops credentials whose
		// server address does not parse as a URL of the host it resolves.
		out = append(out, c.Source+" "+c.Username+":"+c.Password+"@"+c.ServerAddress)
	}
	return out
}

func TestSecretsLookup(t *testing.T) {
	cases := []struct {
		name         string
		image        string
		secrets      []*corev1.Secret
		want         []string
		wantProblems []string // substrings, one per problem
	}{
		{
			name:    "dockerconfigjson username and password",
			image:   "registry.io/app:v1",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("a", `{"registry.io":{"username":"u","password":"p"}}`)},
			want:    []string{"secret ns/a u:p@"},
		},
		{
			name:    "dockercfg auth decoded, password keeps colons",
			image:   "registry.io/app",
			secrets: []*corev1.Secret{dockercfgSecret("b", fmt.Sprintf(`{"https://registry.io":{"auth":%q}}`, b64("bob:s3:cr:et")))},
			want:    []string{"secret ns/b bob:s3:cr:et@"},
		},
		{
			name:  "auth ignored when username and password are set",
			image: "registry.io/app",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("a",
				fmt.Sprintf(`{"registry.io":{"username":"u","password":"p","auth":%q}}`, b64("x:y")))},
			want: []string{"secret ns/a u:p@"},
		},
		{
			name:    "docker hub key matches a short name",
			image:   "nginx",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("hub", `{"https://index.docker.io/v1/":{"username":"h","password":"p"}}`)},
			want:    []string{"secret ns/hub h:p@"},
		},
		{
			name:    "docker.io key matches index.docker.io image",
			image:   "index.docker.io/user/app:v1",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("hub", `{"docker.io":{"username":"h","password":"p"}}`)},
			want:    []string{"secret ns/hub h:p@"},
		},
		{
			name:    "docker hub key does not match another registry",
			image:   "gcr.io/app",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("hub", `{"https://index.docker.io/v1/":{"username":"h","password":"p"}}`)},
		},
		{
			name:  "port and path must match",
			image: "registry.io:5000/team/app",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("a", `{
				"registry.io":{"username":"noport","password":"p"},
				"registry.io:5000/other":{"username":"otherpath","password":"p"},
				"http://registry.io:5000/team":{"username":"team","password":"p"}}`)},
			want: []string{"secret ns/a team:p@"},
		},
		{
			name:  "most specific first, then secret order",
			image: "registry.io/team/app",
			secrets: []*corev1.Secret{
				dockerConfigJSONSecret("a", `{"registry.io":{"username":"a","password":"1"}}`),
				dockerConfigJSONSecret("b", `{"registry.io/team":{"username":"b","password":"2"},"*.io":{"username":"glob","password":"3"}}`),
				dockercfgSecret("c", `{"registry.io":{"username":"c","password":"4"}}`),
			},
			want: []string{
				"secret ns/b b:2@",
				"secret ns/a a:1@",
				"secret ns/c c:4@",
				"secret ns/b glob:3@",
			},
		},
		{
			name:  "identity token only",
			image: "registry.io/app",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("tok",
				`{"registry.io":{"identitytoken":"tkn"}}`)},
			want: []string{"secret ns/tok :@"},
		},
		{
			name:    "entry without credential is skipped",
			image:   "registry.io/app",
			secrets: []*corev1.Secret{dockerConfigJSONSecret("empty", `{"registry.io":{}}`)},
		},
		{
			name:  "wrong secret type is a problem",
			image: "registry.io/app",
			secrets: []*corev1.Secret{gen.Secret("opaque", gen.SetSecretNamespace("ns"), gen.SetSecretType(corev1.SecretTypeOpaque),
				gen.SetSecretData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.io":{"username":"u","password":"hunter2"}}}`)}))},
			wantProblems: []string{`secret ns/opaque: type "Opaque" is not a pull secret`},
		},
		{
			name:         "bad JSON is a problem",
			image:        "registry.io/app",
			secrets:      []*corev1.Secret{dockercfgSecret("bad", `hunter2 {"registry.io":`)},
			wantProblems: []string{"secret ns/bad: .dockercfg: invalid JSON at byte offset"},
		},
		{
			name:         "JSON of the wrong shape is a problem",
			image:        "registry.io/app",
			secrets:      []*corev1.Secret{dockerConfigJSONSecret("shape", `{"registry.io":"hunter2"}`)},
			wantProblems: []string{"secret ns/shape: .dockerconfigjson: invalid JSON"},
		},
		{
			name:         "missing data key is a problem",
			image:        "registry.io/app",
			secrets:      []*corev1.Secret{gen.Secret("nokey", gen.SetSecretNamespace("ns"), gen.SetSecretType(corev1.SecretTypeDockerConfigJson))},
			wantProblems: []string{"secret ns/nokey: has no .dockerconfigjson key"},
		},
		{
			name:  "bad auth is a problem, other entries still count",
			image: "registry.io/app",
			secrets: []*corev1.Secret{
				dockerConfigJSONSecret("mixed", `{"registry.io":{"auth":"!!hunter2!!"},"registry.io/app":{"username":"u","password":"p"}}`),
				nil,
			},
			want:         []string{"secret ns/mixed u:p@"},
			wantProblems: []string{`secret ns/mixed: registry "registry.io": "auth" is not valid base64`},
		},
		{
			name:         "auth without colon is a problem",
			image:        "registry.io/app",
			secrets:      []*corev1.Secret{dockerConfigJSONSecret("nocolon", fmt.Sprintf(`{"registry.io":{"auth":%q}}`, b64("hunter2")))},
			wantProblems: []string{`secret ns/nocolon: registry "registry.io": "auth" does not decode to "username:password"`},
		},
		{
			name:         "invalid key is a problem",
			image:        "registry.io/app",
			secrets:      []*corev1.Secret{dockerConfigJSONSecret("key", `{"registry.io:port":{"username":"u","password":"hunter2"}}`)},
			wantProblems: []string{`secret ns/key: registry "registry.io:port": not a registry location`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds, problems := NewResolver(nil).Lookup(context.Background(), tc.image, tc.secrets)
			assert.Equal(t, tc.want, userPass(creds))
			require.Len(t, problems, len(tc.wantProblems), "problems: %v", problems)
			for i, p := range problems {
				assert.Contains(t, p.Error(), tc.wantProblems[i])
				assert.NotContains(t, p.Error(), "hunter2", "a problem must not quote secret data")
			}
		})
	}
}

func TestSecretCredentialFields(t *testing.T) {
	s := dockerConfigJSONSecret("full", `{"registry.io":{"username":"u","password":"p","identitytoken":"it","registrytoken":"rt"}}`)
	creds, problems := NewResolver(nil).Lookup(context.Background(), "registry.io/app", []*corev1.Secret{s})
	require.Empty(t, problems)
	require.Len(t, creds, 1)
	assert.Equal(t, Credential{
		Auth:   cri.Auth{Username: "u", Password: "p", IdentityToken: "it", RegistryToken: "rt"},
		Source: "secret ns/full",
	}, creds[0])
}

func TestInvalidImageIsAProblem(t *testing.T) {
	creds, problems := NewResolver(nil).Lookup(context.Background(), "not an image", nil)
	assert.Empty(t, creds)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Error(), "invalid image reference")
}
