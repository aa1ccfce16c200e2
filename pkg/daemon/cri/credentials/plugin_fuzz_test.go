//go:build unix

package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

// FuzzPluginResponse runs a credential-provider "plugin" that prints the
// fuzzed bytes as its response (cat of a file) and checks how the daemon
// takes it. Invariants: no panic; a response that is not JSON of a
// CredentialProviderResponse, or has another apiVersion or kind, or an
// invalid cacheKeyType, is an error and yields nothing; otherwise every
// auth pattern returned has a usable key and a credential, they are sorted
// most specific first, and they are cached exactly when the response's
// cacheDuration (or else the default) is positive, whatever its size or
// sign; credentials handed out have no ServerAddress; and neither the error
// nor the daemon's log quotes a password of the response or the user
// information of an auth key.
func FuzzPluginResponse(f *testing.F) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		f.Skip("no cat: ", err)
	}
	dir := f.TempDir()
	resp := filepath.Join(dir, "response")

	head := `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse",`
	for _, seed := range []struct{ data, image string }{
		{head + `"cacheKeyType":"Image","cacheDuration":"5m","auth":{"registry.io/app":{"username":"u","password":"hunter22"}}}`, "registry.io/app:v1"},
		{head + `"cacheKeyType":"Registry","auth":{"*.dkr.ecr.*.amazonaws.com":{"username":"AWS","password":"ecr-token-1234"}}}`, "123.dkr.ecr.us-east-1.amazonaws.com/app"},
		{head + `"cacheKeyType":"Global","cacheDuration":"0s","auth":{"docker.io":{"username":"hub","password":"hub-password"}}}`, "nginx"},
		{head + `"cacheKeyType":"Image","cacheDuration":"-1h","auth":{"registry.io":{"username":"u","password":"negative-ttl"}}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","cacheDuration":"2562047h47m16.854775807s","auth":{"registry.io":{"username":"u","password":"huge-ttl-pw"}}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","cacheDuration":"99999999999h","auth":{"registry.io":{"username":"u","password":"overflow-pw"}}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","cacheDuration":300,"auth":{}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","cacheDuration":"hunter22","auth":{}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Bogus","auth":{"registry.io":{"username":"u","password":"bogus-key-type"}}}`, "registry.io/app"},
		{head + `"cacheKeyType":"","auth":null}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","auth":{"https://user:hunter22@registry.io":{"username":"u","password":"p"},"[bad":{"username":"u","password":"p"},"registry.io:port":{"password":"x"},"":{"username":"u"},"REGISTRY.IO:5000/V2":{"username":"u","password":"p"}}}`, "registry.io:5000/v2/app"},
		{head + `"cacheKeyType":"Image","auth":{"registry.io":{"username":"","password":""},"registry.io/app":{"username":"u","password":"hunter22"}}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","auth":{"registry.io":{"username":12345678,"password":"typed-wrong"}}}`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","auth":{"registry.io":"hunter22"}}`, "registry.io/app"},
		{`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"registry.io":{"username":"u","password":"old-api-pw"}}}`, "registry.io/app"},
		{`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"Other","cacheKeyType":"Image"}`, "registry.io/app"},
		{`this is not json hunter22`, "registry.io/app"},
		{`{"auth":{"registry.io":{"password":"truncated`, "registry.io/app"},
		{``, "registry.io/app"},
		{`null`, "registry.io/app"},
		{`[]`, "registry.io/app"},
		{head + `"cacheKeyType":"Image","auth":{"registry.io":{"username":"u","password":"first"}},"auth":{"registry.io":{"username":"u","password":"second-pw"}}}`, "registry.io/app"},
	} {
		f.Add([]byte(seed.data), seed.image)
	}

	f.Fuzz(func(t *testing.T, data []byte, image string) {
		img, err := parseImage(image)
		if err != nil {
			return
		}
		if err := os.WriteFile(resp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs), textlogger.Verbosity(10)))
		ctx := klog.NewContext(context.Background(), logger)
		clk := clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
		p := &provider{
			name:                 "fuzz",
			path:                 cat,
			args:                 []string{resp},
			defaultCacheDuration: time.Minute,
			timeout:              30 * time.Second,
			cache:                cache.NewExpiringWithClock(clk),
		}

		patterns, err := p.run(ctx, img)

		var want credentialproviderv1.CredentialProviderResponse
		decodeErr := json.Unmarshal(data, &want)
		valid := decodeErr == nil &&
			want.APIVersion == pluginAPIVersion && want.Kind == "CredentialProviderResponse" &&
			(want.CacheKeyType == credentialproviderv1.ImagePluginCacheKeyType ||
				want.CacheKeyType == credentialproviderv1.RegistryPluginCacheKeyType ||
				want.CacheKeyType == credentialproviderv1.GlobalPluginCacheKeyType)
		switch {
		case valid && err != nil:
			t.Fatalf("valid response %q: %v", data, err)
		case !valid && err == nil:
			t.Fatalf("invalid response %q (decoding: %v) accepted with %d patterns", data, decodeErr, len(patterns))
		case !valid && patterns != nil:
			t.Fatalf("invalid response %q gave patterns with the error %v", data, err)
		}
		checkPluginSecrets(t, data, img, want, err, logs.String())
		if err != nil {
			if _, ok := p.cached(img); ok {
				t.Fatalf("a failed run was cached")
			}
			return
		}

		if len(patterns) > len(want.Auth) {
			t.Fatalf("%d patterns from %d auth entries", len(patterns), len(want.Auth))
		}
		for i, ap := range patterns {
			if ap.cred.Username == "" && ap.cred.Password == "" {
				t.Fatalf("pattern %q holds no credential", ap.key)
			}
			if ap.cred.Source != "plugin fuzz" {
				t.Fatalf("pattern %q has source %q", ap.key, ap.cred.Source)
			}
			if _, err := parsePattern(ap.key); err != nil {
				t.Fatalf("pattern key %q does not parse: %v", ap.key, err)
			}
			if i > 0 && len(patterns[i-1].key) < len(ap.key) {
				t.Fatalf("pattern %q sorted after the less specific %q", ap.key, patterns[i-1].key)
			}
		}

		ttl := p.defaultCacheDuration
		if want.CacheDuration != nil {
			ttl = want.CacheDuration.Duration
		}
		cached, ok := p.cached(img)
		switch {
		case ttl > 0 && !ok:
			t.Fatalf("cacheDuration %v: not cached", ttl)
		case ttl <= 0 && ok:
			t.Fatalf("cacheDuration %v: cached", ttl)
		case ok && !reflect.DeepEqual(cached, patterns):
			t.Fatalf("cached patterns differ from the run's")
		}
		if ttl > time.Second {
			clk.Step(ttl - time.Second)
			if _, ok := p.cached(img); !ok {
				t.Fatalf("cacheDuration %v: gone %v later", ttl, ttl-time.Second)
			}
		}

		creds, err := p.lookup(ctx, img)
		if err != nil {
			t.Fatalf("lookup after a good run: %v", err)
		}
		for _, c := range creds {
			if c.ServerAddress != "" {
				t.Fatalf("credential has ServerAddress %q", c.ServerAddress)
			}
		}
	})
}

// pluginFixedText is what the plugin errors and logs say whatever the
// response: a "password" found in it cannot be told apart.
var pluginFixedText = strings.Join([]string{
	"plugin fuzz: image ", "response is not a JSON CredentialProviderResponse: invalid JSON at byte offset ",
	"invalid JSON: field ", " cannot hold a JSON ", "invalid JSON: a JSON ", " where an object was expected",
	"response has apiVersion ", ", kind ", "; want credentialprovider.kubelet.k8s.io/v1, CredentialProviderResponse",
	"response has invalid cacheKeyType ", " (want Image, Registry or Global)",
	"Running credential provider plugin", "Credential provider plugin returned an invalid auth key, ignored",
	"Credential provider cache hit", "plugin.go:", "plugin=", "image=", "key=", "err=",
	"must not hold user information", "must not hold a query ('?')", "must not hold a fragment ('#')",
	"has no host", "host label ", "syntax error in pattern", "invalid port ", " after host",
	"invalid URL escape ", "invalid character ", " in host name", "net/url: invalid userinfo",
	"missing ']' in host", "invalid IPv6 host", "empty", "object", "string", "number", "array", "bool", "null",
	"username", "password",
}, "\x00")

// checkPluginSecrets fails when err or the log quotes a password of the
// response or the user information of one of its auth keys. A value shorter
// than 6 bytes, without a letter, holding a quote or a backslash, or found
// in a text the error or the log may show (the apiVersion, kind and
// cacheKeyType, the image, an auth key without user information, fixed
// text) is not checked: it cannot be told from the text around it.
func checkPluginSecrets(t *testing.T, data []byte, img imageRef, resp credentialproviderv1.CredentialProviderResponse, err error, logs string) {
	t.Helper()
	shown := []string{resp.APIVersion, resp.Kind, string(resp.CacheKeyType),
		strconv.Quote(resp.APIVersion), strconv.Quote(resp.Kind), strconv.Quote(string(resp.CacheKeyType)),
		img.repo, strconv.Quote(img.repo), pluginFixedText}
	var secrets []string
	for k, a := range resp.Auth {
		secrets = append(secrets, a.Password)
		if ui := keyUserinfo(k); ui != "" {
			_, pass, _ := strings.Cut(ui, ":")
			secrets = append(secrets, ui, pass)
		} else {
			shown = append(shown, k, strconv.Quote(k))
		}
	}
	// A response that does not decode, or names an auth key twice, still
	// holds passwords: look for "password":"..." by hand too.
	for _, part := range strings.Split(string(data), `"password":"`)[1:] {
		if end := strings.IndexByte(part, '"'); end >= 0 {
			secrets = append(secrets, part[:end])
		}
	}
	texts := []string{logs}
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, s := range secrets {
		if len(s) < 6 || strings.ContainsAny(s, `"\`) || !strings.ContainsFunc(s, isLetter) {
			continue
		}
		skip := false
		for _, sh := range shown {
			if strings.Contains(sh, s) {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		for _, text := range texts {
			if strings.Contains(text, s) {
				t.Fatalf("credential material %q quoted in %q", s, text)
			}
		}
	}
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// FuzzPluginStderr runs a plugin that prints arbitrary text with a secret
// embedded the ways a cloud API, a token server or a signed URL hold one
// (critest.EmbedSecret) on stderr and fails. Invariants: the error, which
// reaches NodeImage statuses and Events, says only that the plugin failed
// and its exit status, nothing it printed; the log, even at -v=10, never
// holds the secret.
func FuzzPluginStderr(f *testing.F) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		f.Skip("no sh: ", err)
	}
	dir := f.TempDir()
	script := filepath.Join(dir, "plugin")
	if err := os.WriteFile(script, []byte("#!"+sh+"\ncat \"$1\" >&2\nexit 3\n"), 0o700); err != nil {
		f.Fatal(err)
	}
	out := filepath.Join(dir, "stderr")
	for form := range uint8(critest.SecretForms) {
		f.Add("An error occurred (ExpiredToken) when calling the GetAuthorizationToken operation:", "", "wJalrXUtnFEMIK7MDENG", form, form)
	}
	f.Add("line one\nline two", "\xff\xfe", "AKIAIOSFODNN7EXAMPLEKEY", uint8(0), uint8(8))
	f.Add("", strings.Repeat("x", 900), "ghp0123456789abcdefABCDEF", uint8(6), uint8(3))
	f.Fuzz(func(t *testing.T, before, after, secret string, form, name uint8) {
		secret = critest.KeepAlnum(secret)
		if len(secret) < 12 {
			return
		}
		before, after = critest.WithoutQuotes(before), critest.WithoutQuotes(after)
		if strings.Contains(before, secret) || strings.Contains(after, secret) {
			return
		}
		text := before + "\n" + critest.EmbedSecret(form, name, secret) + "\n" + after
		if len(text) > maxStderr {
			// What is cut off cannot leak; keep the secret within the part
			// the daemon keeps.
			return
		}
		if err := os.WriteFile(out, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs), textlogger.Verbosity(10)))
		p := &provider{name: "fuzz", path: script, args: []string{out}, timeout: 30 * time.Second, cache: cache.NewExpiring()}
		img, err := parseImage("reg.example.com/app")
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.run(klog.NewContext(context.Background(), logger), img)
		if want := "plugin fuzz: image reg.example.com/app: plugin failed (exit status 3)"; err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds the secret %q of the plugin's stderr %q:\n%s", secret, text, logs.String())
		}
	})
}
