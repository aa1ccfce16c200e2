package cri_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

var pullReasons = map[string]bool{
	cri.PullReasonNotFound: true, cri.PullReasonUnauthorized: true, cri.PullReasonTimeout: true,
	cri.PullReasonCancelled: true, cri.PullReasonUnavailable: true, cri.PullReasonFailed: true,
}

// fuzzPullError builds the error a pull may return: plain text, a gRPC
// status, either wrapped as remoteRuntime.PullImage wraps it, or a context
// error.
func fuzzPullError(msg string, code uint32, form uint8) error {
	c := codes.Code(code % 17)
	switch form % 5 {
	case 0:
		return errors.New(msg)
	case 1:
		return status.Error(c, msg)
	case 2:
		return fmt.Errorf("CRI PullImage some/image:1: %w", status.Error(c, msg))
	case 3:
		return fmt.Errorf("%s: %w", msg, context.DeadlineExceeded)
	default:
		return fmt.Errorf("%s: %w", msg, context.Canceled)
	}
}

// FuzzDescribePullError feeds arbitrary runtime error text and gRPC codes
// to DescribePullError. Invariants: no panic; deterministic; the reason is
// one of the PullReason* constants and follows the gRPC code or context
// error where one decides; the message is one line of single spaces,
// trimmed, at most MaxPullMessageLen bytes, valid UTF-8 when the input is,
// and empty only when the error text is blank.
func FuzzDescribePullError(f *testing.F) {
	for _, msg := range []string{
		`failed to pull and unpack image "docker.io/library/busybox:nope": failed to resolve reference "docker.io/library/busybox:nope": docker.io/library/busybox:nope: not found`,
		`reading manifest nope in quay.io/crio/busybox: manifest unknown: manifest unknown`,
		`failed to authorize: failed to fetch oauth token: unexpected status from POST request to https://registry.example.com/token?scope=repository%3Ateam%2Fapp%3Apull&service=registry.example.com: 401 Unauthorized`,
		`failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://prod.blob.example.com/x?X-Amz-Signature=abc123&X-Amz-Credential=AKIA": dial tcp: i/o timeout`,
		"rpc error: code = Unknown desc = line one\nline two\t\ttabs",
		"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.signature",
		"proxy https://user:hunter2hunter2@proxy.example.com:3128 refused",
		"https://u:p@h:abc/x?sig=s",
		strings.Repeat("é", 400),
		strings.Repeat("x", 600),
		"",
		"   ",
		"\xff\xfe",
		"https://",
		"a://b://c@d?e=f",
	} {
		for _, form := range []uint8{0, 2} {
			f.Add(msg, uint32(codes.Unknown), form)
		}
	}
	f.Add("context deadline exceeded", uint32(codes.DeadlineExceeded), uint8(1))
	f.Add("x", uint32(codes.Canceled), uint8(2))
	f.Add("x", uint32(codes.Unavailable), uint8(1))
	f.Add("no such image", uint32(codes.PermissionDenied), uint8(2))
	f.Add("boom", uint32(0), uint8(3))
	f.Add("boom", uint32(0), uint8(4))
	f.Fuzz(func(t *testing.T, msg string, code uint32, form uint8) {
		err := fuzzPullError(msg, code, form)
		reason, message := cri.DescribePullError(err)
		if err == nil {
			// status.Error with code OK is no error.
			if reason != "" || message != "" {
				t.Fatalf("nil error gave %q, %q", reason, message)
			}
			return
		}
		reason2, message2 := cri.DescribePullError(err)
		if reason != reason2 || message != message2 {
			t.Fatalf("not deterministic: %q %q, then %q %q", reason, message, reason2, message2)
		}
		if !pullReasons[reason] {
			t.Fatalf("reason %q is not one of the PullReason* constants", reason)
		}
		var st interface{ GRPCStatus() *status.Status }
		switch c := codes.Unknown; {
		case errors.Is(err, context.Canceled):
			if reason != cri.PullReasonCancelled {
				t.Fatalf("context.Canceled gave %q", reason)
			}
		case errors.Is(err, context.DeadlineExceeded):
			if reason != cri.PullReasonTimeout {
				t.Fatalf("context.DeadlineExceeded gave %q", reason)
			}
		case errors.As(err, &st):
			c = st.GRPCStatus().Code()
			want := map[codes.Code]string{
				codes.Canceled: cri.PullReasonCancelled, codes.DeadlineExceeded: cri.PullReasonTimeout,
				codes.Unavailable: cri.PullReasonUnavailable, codes.Unauthenticated: cri.PullReasonUnauthorized,
				codes.PermissionDenied: cri.PullReasonUnauthorized,
			}[c]
			if want != "" && reason != want {
				t.Fatalf("code %v gave %q, want %q", c, reason, want)
			}
			if c == codes.NotFound && reason != cri.PullReasonNotFound && reason != cri.PullReasonUnauthorized {
				t.Fatalf("code NotFound gave %q", reason)
			}
		}

		if len(message) > cri.MaxPullMessageLen {
			t.Fatalf("message is %d bytes, more than %d", len(message), cri.MaxPullMessageLen)
		}
		if strings.TrimSpace(message) != message || strings.Contains(message, "  ") ||
			strings.ContainsFunc(message, func(r rune) bool { return r != ' ' && unicode.IsSpace(r) }) {
			t.Fatalf("message %q is not one trimmed line of single spaces", message)
		}
		if utf8.ValidString(msg) && !utf8.ValidString(message) {
			t.Fatalf("message %q of valid UTF-8 input is not valid UTF-8", message)
		}
		if message == "" && strings.TrimSpace(err.Error()) != "" {
			t.Fatalf("empty message for error %q", err)
		}
	})
}

// FuzzDescribePullErrorRedacts puts a secret where DescribePullError is
// meant to redact it (URL user information, a URL query value other than
// scope and service, a Basic or Bearer token) inside arbitrary text, with
// an arbitrary rest of the URL, and checks that the message never holds the
// secret, whatever the URL looks like and whether or not it parses.
func FuzzDescribePullErrorRedacts(f *testing.F) {
	f.Add("failed to resolve reference:", ": 401 Unauthorized", "registry.example.com/v2/app/manifests/v1", "user", "s3cr3tS3cr3tS3cr3t", uint8(0), uint8(2))
	f.Add("proxy", "refused", "proxy.example.com:3128", "", "ghp0123456789abcdefABCDEF", uint8(1), uint8(0))
	f.Add("Get", "dial tcp: i/o timeout", "prod.blob.example.com/x", "X-Amz-Signature", "0123456789abcdef0123", uint8(2), uint8(1))
	f.Add("POST", "401", "registry.example.com/token?scope=repository%3Aapp%3Apull&service=r", "access_token", "tokentokentokentoken", uint8(2), uint8(2))
	f.Add("www-authenticate:", "", "", "", "dXNlcjpodW50ZXIyaHVudGVyMg", uint8(3), uint8(0))
	f.Add("Authorization:", "invalid", "", "", "eyJhbGciOiJSUzI1NiJ9payloadsignature", uint8(4), uint8(2))
	f.Add("x", "y", "h:abc/path", "user", "passwordpassword", uint8(0), uint8(0))
	f.Add("x", "y", "h%zz/path", "user", "passwordpassword", uint8(0), uint8(0))
	f.Add("x", "y", "h@h2/path", "user", "passwordpassword", uint8(0), uint8(0))
	f.Add("x", "y", "h/p%zz", "sig", "passwordpassword", uint8(2), uint8(0))
	f.Add("x", "y", "[::1/p", "sig", "passwordpassword", uint8(2), uint8(0))
	f.Add("x", "y", "a://b", "u", "passwordpassword", uint8(0), uint8(0))
	f.Add(strings.Repeat("long ", 120), "", "h", "u", "passwordpassword", uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, prefix, suffix, rest, user, secret string, kind, form uint8) {
		secret = critest.KeepAlnum(secret)
		user = critest.KeepAlnum(user)
		// The rest of the URL: anything the URL pattern takes in.
		rest = strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) || strings.ContainsRune(`"'<>`, r) {
				return -1
			}
			return r
		}, rest)
		if len(secret) < 12 {
			return
		}
		var where string
		switch kind % 5 {
		case 0:
			where = "https://" + user + ":" + secret + "@" + rest
		case 1:
			where = "https://" + secret + "@" + rest
		case 2:
			key := user
			if key == "" || strings.EqualFold(key, "scope") || strings.EqualFold(key, "service") {
				key = "sig"
			}
			// A "#" would make the query a fragment, which is not redacted.
			rest = strings.ReplaceAll(rest, "#", "")
			sep := "?"
			if strings.Contains(rest, "?") {
				sep = "&"
			}
			where = "https://" + rest + sep + key + "=" + secret
		case 3:
			where = "Basic " + secret + "=="
		default:
			where = "Bearer " + secret
		}
		for _, s := range []string{prefix, suffix, rest, user} {
			if strings.Contains(s, secret) {
				return
			}
		}
		msg := prefix + " " + where + " " + suffix
		_, message := cri.DescribePullError(fuzzPullError(msg, uint32(codes.Unknown), form%3))
		if strings.Contains(message, secret) {
			t.Fatalf("message %q holds the secret %q of %q", message, secret, where)
		}
	})
}

// FuzzRedactsRegistryBodies embeds a secret in one of the forms registries,
// token servers and signed URLs put it in a pull error (critest.EmbedSecret:
// JSON bodies plain or quoted, key=value, Authorization headers, URL user
// information, signed URL queries, Bearer tokens) between arbitrary text,
// and checks that neither Redact nor DescribePullError's message holds the
// secret. Quotes and backslashes are taken out of the surrounding text: an
// unbalanced quote there would make the embedded JSON another string.
func FuzzRedactsRegistryBodies(f *testing.F) {
	for form := range uint8(critest.SecretForms) {
		for _, name := range []uint8{0, 4, 8, 12} {
			f.Add("failed to fetch oauth token: unexpected status: 401 Unauthorized:", "", "s3cr3tS3cr3tS3cr3t", form, name, uint8(2))
		}
	}
	f.Add("unexpected body", "trailing text", "eyJhbGciOiJSUzI1NiJ9payload", uint8(1), uint8(1), uint8(0))
	f.Add(strings.Repeat("long ", 120), "", "passwordpassword", uint8(0), uint8(0), uint8(1))
	f.Add("x=", "=y", "AKIAIOSFODNN7EXAMPLE", uint8(2), uint8(5), uint8(0))
	f.Fuzz(func(t *testing.T, prefix, suffix, secret string, form, name, errForm uint8) {
		secret = critest.KeepAlnum(secret)
		if len(secret) < 12 {
			return
		}
		prefix, suffix = critest.WithoutQuotes(prefix), critest.WithoutQuotes(suffix)
		if strings.Contains(prefix, secret) || strings.Contains(suffix, secret) {
			return
		}
		msg := prefix + " " + critest.EmbedSecret(form, name, secret) + " " + suffix
		if got := cri.Redact(msg); strings.Contains(got, secret) {
			t.Fatalf("Redact(%q) = %q holds the secret", msg, got)
		}
		_, message := cri.DescribePullError(fuzzPullError(msg, uint32(codes.Unknown), errForm%3))
		if strings.Contains(message, secret) {
			t.Fatalf("message %q of %q holds the secret", message, msg)
		}
	})
}
