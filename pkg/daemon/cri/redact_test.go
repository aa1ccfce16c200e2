package cri_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain text unchanged", "failed to resolve reference: not found", "failed to resolve reference: not found"},
		{"folds lines", "line one\n\tline  two  ", "line one line two"},
		{"URL user info", `Get "https://robot:s3cret@registry.local/v2/"`, `Get "https://registry.local/v2/"`},
		{"signed URL query, scope kept", "GET https://blob.example.com/x?scope=repo&X-Amz-Signature=abc123def&sig=zzz9:",
			"GET https://blob.example.com/x?X-Amz-Signature=redacted&scope=repo&sig=redacted:"},
		{"URL fragment with a value", "https://h/cb#access_token=tok3n", "https://h/cb#redacted"},
		{"bearer header", "Authorization: Bearer abc.def", "Authorization: Bearer [redacted]"},
		{"short basic header", `authorization="Basic dXNl"`, `authorization="Basic [redacted]"`},
		{"proxy header, other scheme", "Proxy-Authorization: Token t0k", "Proxy-Authorization: Token [redacted]"},
		{"prose about authorization kept", "may require authorization: server message: insufficient_scope",
			"may require authorization: server message: insufficient_scope"},
		{"long bearer token in prose", "sent Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig", "sent Bearer [redacted]"},
		{"key=value outside a URL", "token=abc123 sig=Zm9v&se=2025 password=hunter2; X-Amz-Credential=AKIA/x",
			"token=[redacted] sig=[redacted]&se=2025 password=[redacted]; X-Amz-Credential=[redacted]"},
		{"query without scheme", "registry.local/v2/token?service=r&access_token=s3cr3t", "registry.local/v2/token?service=r&access_token=[redacted]"},
		{"any name holding a secret word", "AWS_SECRET_ACCESS_KEY=abc mytoken=x scope=repo Expires=12",
			"AWS_SECRET_ACCESS_KEY=[redacted] mytoken=[redacted] scope=repo Expires=12"},
		{"STS JSON", `{"Credentials":{"AccessKeyId":"ASIA1","SecretAccessKey":"wJalr","SessionToken":"FwoG"},"Region":"eu"}`,
			`{"Credentials":{"AccessKeyId":[redacted],"SecretAccessKey":[redacted],"SessionToken":[redacted]},"Region":"eu"}`},
		{"JSON token body", `unexpected body {"token":"eyJhbG.c.d","access_token":"at-123","expires_in":300}`,
			`unexpected body {"token":[redacted],"access_token":[redacted],"expires_in":300}`},
		{"JSON password with escapes and spaces", `{"username": "u", "password" : "p\"w\\d", "x":1}`,
			`{"username": "u", "password" : [redacted], "x":1}`},
		{"JSON number and truncated string", `{"password":12345,"auth":"dXNlcjpw`, `{"password":[redacted],"auth":[redacted]`},
		{"escaped JSON in a quoted body", `body "{\"errors\":[],\"token\":\"t0ken\",\"password\":\"pw\"}"`,
			`body "{\"errors\":[],\"token\":[redacted],\"password\":[redacted]}"`},
		{"plugin stderr", "aws: error: Unable to locate credentials\nAWS_SECRET_ACCESS_KEY=abc secret=xyz",
			"aws: error: Unable to locate credentials AWS_SECRET_ACCESS_KEY=[redacted] secret=[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, cri.Redact(tc.in))
		})
	}
}
