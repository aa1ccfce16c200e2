package critest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SecretNames are names a secret goes by in registry answers, signed URLs,
// token-server bodies and credential plugins' output.
var SecretNames = []string{
	"password", "token", "access_token", "refresh_token", "X-Amz-Signature", "X-Amz-Credential",
	"X-Amz-Security-Token", "sig", "AWS_SECRET_ACCESS_KEY", "client_secret", "auth", "identitytoken",
	"SessionToken", "Signature",
}

// secretSchemes are Authorization schemes.
var secretSchemes = []string{"Bearer", "Basic", "bearer", "Token", "Digest"}

// SecretForms is how many forms EmbedSecret knows.
const SecretForms = 8

// EmbedSecret returns text holding secret in one of SecretForms forms
// (form modulo SecretForms), named after SecretNames[name modulo its
// length] where the form has a name: a JSON field, the same JSON quoted as
// containerd quotes a body (%q), key=value, an Authorization header, URL
// user information (with and without a user), a signed URL's query value,
// and a Bearer token in prose. Tests put it in runtime errors, registry
// bodies and plugin stderr and check that the secret never comes out.
func EmbedSecret(form, name uint8, secret string) string {
	n := SecretNames[int(name)%len(SecretNames)]
	switch form % SecretForms {
	case 0:
		return fmt.Sprintf(`{"errors":[{"code":"DENIED"}],%q:%q,"expires_in":60}`, n, secret)
	case 1:
		return fmt.Sprintf("body %q", fmt.Sprintf(`{"details":"denied",%q:%q}`, n, secret))
	case 2:
		return n + "=" + secret
	case 3:
		return "Authorization: " + secretSchemes[int(name)%len(secretSchemes)] + " " + secret
	case 4:
		return "https://robot:" + secret + "@registry.example.com/v2/"
	case 5:
		return "https://" + secret + "@registry.example.com/v2/"
	case 6:
		return "https://blobs.example.com/sha256/ab?scope=repo&" + n + "=" + secret + "&Expires=1"
	default:
		return "www-authenticate failed, sent Bearer " + secret
	}
}

// KeepAlnum keeps the ASCII letters and digits of s: fuzzed input made into
// a secret (or a user name) that no redaction rule can miss for its shape.
func KeepAlnum(s string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return -1
	}, s)
}

// WithoutQuotes drops '"' and '\' from fuzzed text put around an embedded
// secret: they would end the JSON string the secret stands in early.
func WithoutQuotes(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}
