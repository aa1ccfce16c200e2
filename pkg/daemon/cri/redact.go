package cri

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a secret in text redacted by Redact.
const Redacted = "[redacted]"

// Redact removes what may be a secret from text a runtime, a registry or a
// credential plugin wrote, and folds it to one line of single spaces:
//
//   - URL user information ("https://user:pass@host" -> "https://host") and
//     URL query values other than scope and service (signed blob URLs:
//     X-Amz-Signature, sig, token, ...);
//   - the credential of an Authorization or Proxy-Authorization header and
//     any Basic or Bearer token;
//   - the value of key=value outside URLs and of JSON fields (plain, or
//     escaped inside a quoted string) whose name looks like a secret's
//     (see secretName: token=, sig=, "password", "access_token", ...).
//
// It is what every runtime, registry and plugin text goes through before it
// reaches a log, an Event or a status; DescribePullError uses it too.
func Redact(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	text = jsonSecret.ReplaceAllString(text, "${1}"+Redacted)
	text = escapedJSONSecret.ReplaceAllString(text, "${1}"+Redacted)
	var b strings.Builder
	last := 0
	for _, m := range urlPattern.FindAllStringIndex(text, -1) {
		b.WriteString(redactPlain(text[last:m[0]]))
		b.WriteString(redactURL(text[m[0]:m[1]]))
		last = m[1]
	}
	b.WriteString(redactPlain(text[last:]))
	return b.String()
}

// secretName is a JSON field or key=value name whose value may be a
// secret: any name holding one of these words, as registries, token
// servers, cloud storage, docker configs and environment dumps name them
// (password, access_token, X-Amz-Signature, sig, AWS_SECRET_ACCESS_KEY,
// SessionToken, auth, ...). Some harmless values are redacted too.
const secretName = `[A-Za-z0-9_.-]*(?i:pass|pwd|secret|token|sig|credential|auth|key|session)[A-Za-z0-9_.-]*`

var (
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)
	// jsonSecret is a secret field of plain JSON: the value runs to the
	// next unescaped quote (or the end of a truncated body); a bare number
	// or literal runs to the next delimiter.
	jsonSecret = regexp.MustCompile(`("` + secretName + `"\s*:\s*)(?:"(?:[^"\\]|\\.)*"?|[^\s,{}\[\]"]+)`)
	// escapedJSONSecret is the same inside a quoted string (%q of a
	// body): quotes are \" and the value ends at the next \".
	escapedJSONSecret = regexp.MustCompile(`(\\+"` + secretName + `\\+"\s*:\s*)(?:\\+"(?:[^"\\]|\\[^"\\])*\\*"?|[^\s,{}\[\]"\\]+)`)
	// authHeader is an Authorization header with its scheme, which is
	// kept. (Without a scheme, "authorization: server message" is prose;
	// authorization=... and JSON fields are caught by the rules below.)
	authHeader = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization"?\s*[:=]\s*"?)(basic|bearer|token|digest|negotiate|aws4-hmac-sha256)\s+[^\s",;]+`)
	tokenAuth  = regexp.MustCompile(`(?i)\b(basic|bearer)\s+[A-Za-z0-9+/._~-]{12,}=*`)
	// keyValueSecret is key=value outside a URL; the value runs to a
	// delimiter.
	keyValueSecret = regexp.MustCompile(`(^|[^A-Za-z0-9_.-])(` + secretName + `)=([^\s&"',;<>()\[\]{}]+)`)
)

// redactPlain redacts text that is not part of a URL.
func redactPlain(s string) string {
	s = authHeader.ReplaceAllString(s, "${1}${2} "+Redacted)
	s = tokenAuth.ReplaceAllString(s, "$1 "+Redacted)
	return keyValueSecret.ReplaceAllString(s, "${1}${2}="+Redacted)
}

// keptQueryKeys are query parameters that hold no secret and say which
// repository a token was asked for.
var keptQueryKeys = map[string]bool{"scope": true, "service": true}

// redactURL drops user info and replaces query values other than
// keptQueryKeys, and a fragment holding "=". A URL with none of them is
// returned unchanged.
func redactURL(raw string) string {
	trimmed := strings.TrimRight(raw, ":,;.)]")
	tail := raw[len(trimmed):]
	u, err := url.Parse(trimmed)
	if err != nil {
		// Not parseable: keep only what cannot hold a secret. User
		// information ends at an "@" and starts right after the scheme.
		if scheme, _, ok := strings.Cut(trimmed, "://"); ok && strings.Contains(trimmed, "@") {
			return scheme + "://" + Redacted + tail
		}
		if i := strings.IndexByte(trimmed, '?'); i >= 0 {
			return trimmed[:i] + Redacted + tail
		}
		return raw
	}
	if u.User == nil && u.RawQuery == "" && !strings.Contains(u.Fragment, "=") {
		return raw
	}
	u.User = nil
	if strings.Contains(u.Fragment, "=") {
		u.Fragment, u.RawFragment = "redacted", ""
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			if keptQueryKeys[strings.ToLower(k)] {
				continue
			}
			for i := range vs {
				vs[i] = "redacted"
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String() + tail
}
