package credentials

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// fuzzSecret is a pull secret of the given type holding data.
func fuzzSecret(dockercfg bool, data []byte) *corev1.Secret {
	if dockercfg {
		return gen.Secret("fuzz", gen.SetSecretNamespace("ns"), gen.SetSecretDockercfg(string(data)))
	}
	return gen.Secret("fuzz", gen.SetSecretNamespace("ns"), gen.SetSecretDockerConfigJSON(string(data)))
}

// secretValues lists the credential material of a docker config entry: the
// password, the tokens, the raw "auth" value and the password it decodes to.
func secretValues(e dockerConfigEntry) []string {
	out := []string{e.Password, e.IdentityToken, e.RegistryToken, e.Auth}
	if raw, err := base64.StdEncoding.DecodeString(e.Auth); err == nil {
		if _, pass, ok := strings.Cut(string(raw), ":"); ok {
			out = append(out, pass)
		}
	}
	return out
}

// keyUserinfo is what may be user information in a registry key
// ("https://user:pass@host"), which is credential material too: all before
// the last "@", after the scheme. It errs on the safe side: a password may
// hold a "/" that makes the URL parser see no user information at all.
func keyUserinfo(key string) string {
	rest := key
	if _, after, ok := strings.Cut(rest, "://"); ok {
		rest = after
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	return rest[:at]
}

// checkNoSecretInProblems fails when a problem quotes credential material
// of entries. A value shorter than 6 bytes, holding a quote or a
// backslash, or found in a registry key (which problems name, quoted) is
// not checked: it cannot be told from the text around it.
func checkNoSecretInProblems(t *testing.T, entries map[string]dockerConfigEntry, problems []error) {
	t.Helper()
	var keys []string
	var secrets []string
	for k, e := range entries {
		keys = append(keys, k, strconv.Quote(k))
		secrets = append(secrets, secretValues(e)...)
		if ui := keyUserinfo(k); ui != "" {
			_, pass, _ := strings.Cut(ui, ":")
			secrets = append(secrets, ui, pass)
		}
	}
	for _, s := range secrets {
		if len(s) < 6 || strings.ContainsAny(s, `"\`) {
			continue
		}
		inKey := false
		for _, k := range keys {
			if strings.Contains(k, s) && keyUserinfo(k) == "" {
				inKey = true
				break
			}
		}
		if inKey {
			continue
		}
		for _, p := range problems {
			if strings.Contains(p.Error(), s) {
				t.Fatalf("problem %q quotes credential material %q", p.Error(), s)
			}
		}
	}
}

// decodeEntries decodes data the way secretEntries does, for the checks;
// ok is false when it does not decode.
func decodeEntries(dockercfg bool, data []byte) (entries map[string]dockerConfigEntry, ok bool) {
	if dockercfg {
		var cfg map[string]dockerConfigEntry
		if json.Unmarshal(data, &cfg) != nil {
			return nil, false
		}
		return cfg, true
	}
	var cfg dockerConfigJSON
	if json.Unmarshal(data, &cfg) != nil {
		return nil, false
	}
	return cfg.Auths, true
}

// FuzzSecretPatterns feeds arbitrary content to a kubernetes.io/dockerconfigjson
// or kubernetes.io/dockercfg pull secret and looks image up in it. Invariants:
// no panic; the result is deterministic; content that is not JSON of the
// right shape is exactly one problem and no credential; every credential
// comes from an entry whose key parses and carries some credential; patterns
// are sorted most specific first; credentials handed out have no
// ServerAddress; and no problem quotes a password, token, "auth" value or
// the user information of a key.
func FuzzSecretPatterns(f *testing.F) {
	b := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, seed := range []struct {
		dockercfg bool
		data      string
		image     string
	}{
		{false, `{"auths":{"registry.io":{"username":"u","password":"hunter22"}}}`, "registry.io/app:v1"},
		{false, `{"auths":{"https://index.docker.io/v1/":{"auth":"` + b("bob:s3:cr:et") + `"}}}`, "nginx"},
		{false, `{"auths":{"registry.io":{"username":"u","password":"p","identitytoken":"it","registrytoken":"rt"}}}`, "registry.io/app"},
		{false, `{"auths":{"registry.io":{"auth":"!!hunter2!!"},"registry.io/app":{"username":"u","password":"p"}}}`, "registry.io/app"},
		{false, `{"auths":{"registry.io":{"auth":"` + b("nocolonhere") + `"}}}`, "registry.io/app"},
		{false, `{"auths":{"registry.io:port":{"username":"u","password":"hunter22"}}}`, "registry.io/app"},
		{false, `{"auths":{"https://user:hunter22@registry.io":{"username":"u","password":"p"}}}`, "registry.io/app"},
		{false, `{"auths":{"*.io":{"username":"glob","password":"p"},"[.io":{"username":"bad","password":"p"}}}`, "a.io/x"},
		{false, `{"auths":{"registry.io":"hunter22"}}`, "registry.io/app"},
		{false, `{"auths":{"registry.io":{"password":12345678}}}`, "registry.io/app"},
		{false, `{"auths":null}`, "registry.io/app"},
		{false, `{"Auths":{"REGISTRY.IO:5000/V2/":{"Username":"u","Password":"p"}}}`, "registry.io:5000/app"},
		{false, `hunter22 {"auths":`, "registry.io/app"},
		{false, ``, ""},
		{false, `[]`, "a"},
		{false, `{"auths":{"":{"username":"u"}}}`, "a"},
		{true, `{"registry.io":{"username":"u","password":"hunter22"}}`, "registry.io/app"},
		{true, `{"https://registry.io":{"auth":"` + b("bob:secret") + `"}}`, "registry.io/app"},
		{true, `{"registry.io":{"auth":"` + b(strings.Repeat("x", 4096)+":"+strings.Repeat("y", 4096)) + `"}}`, "registry.io/app"},
		{true, `{"http://registry.io:5000/team":{"auth":"` + b(":") + `"}}`, "registry.io:5000/team/app"},
		{true, `"not an object"`, "registry.io/app"},
	} {
		f.Add(seed.dockercfg, []byte(seed.data), seed.image)
	}
	f.Fuzz(func(t *testing.T, dockercfg bool, data []byte, image string) {
		secret := fuzzSecret(dockercfg, data)
		patterns, problems := secretPatterns([]*corev1.Secret{secret})
		patterns2, problems2 := secretPatterns([]*corev1.Secret{fuzzSecret(dockercfg, data)})
		if !reflect.DeepEqual(patterns, patterns2) || !reflect.DeepEqual(errorStrings(problems), errorStrings(problems2)) {
			t.Fatalf("secretPatterns is not deterministic")
		}

		entries, ok := decodeEntries(dockercfg, data)
		if !ok {
			if len(patterns) != 0 || len(problems) != 1 {
				t.Fatalf("undecodable content gave %d patterns and problems %v; want none and one problem", len(patterns), problems)
			}
		} else if len(patterns)+len(problems) > len(entries) {
			t.Fatalf("%d entries gave %d patterns and %d problems", len(entries), len(patterns), len(problems))
		}
		checkNoSecretInProblems(t, entries, problems)

		for i, p := range patterns {
			if p.cred.Auth == (dockerConfigEntryAuthZero) {
				t.Fatalf("pattern %q holds no credential", p.key)
			}
			if p.cred.Source != "secret ns/fuzz" {
				t.Fatalf("pattern %q has source %q", p.key, p.cred.Source)
			}
			if p.key != locationKey(p.loc) {
				t.Fatalf("pattern key %q, location renders as %q", p.key, locationKey(p.loc))
			}
			if i > 0 && len(patterns[i-1].key) < len(p.key) {
				t.Fatalf("pattern %q sorted after the less specific %q", p.key, patterns[i-1].key)
			}
		}

		creds, lookupProblems := NewResolver(nil).Lookup(context.Background(), image, []*corev1.Secret{secret})
		if _, err := parseImage(image); err != nil {
			if len(creds) != 0 || len(lookupProblems) != 1 {
				t.Fatalf("invalid image %q gave credentials %d and problems %v", image, len(creds), lookupProblems)
			}
			return
		}
		if len(creds) > len(patterns) {
			t.Fatalf("%d credentials from %d patterns", len(creds), len(patterns))
		}
		for _, c := range creds {
			if c.ServerAddress != "" {
				t.Fatalf("credential for %q has ServerAddress %q", image, c.ServerAddress)
			}
		}
		checkNoSecretInProblems(t, entries, lookupProblems)
	})
}

// dockerConfigEntryAuthZero is the empty credential.
var dockerConfigEntryAuthZero = Credential{}.Auth

func errorStrings(errs []error) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = err.Error()
	}
	return out
}

// FuzzDockerConfigEntry builds one well-formed docker config entry from its
// fields. Invariants: username and password given are used as they are; an
// "auth" value is decoded only when neither is given, into exactly the
// user and password it encodes (the password keeps its colons), and one
// that is not base64 of "user:password" is a problem; an entry without any
// credential is skipped; a key that does not parse is a problem; no
// problem quotes credential material.
func FuzzDockerConfigEntry(f *testing.F) {
	b := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f.Add("registry.io", "u", "hunter22", "", "", "")
	f.Add("https://index.docker.io/v1/", "", "", b("bob:s3:cr:et"), "", "")
	f.Add("registry.io:5000/team", "", "", b("nocolon"), "", "")
	f.Add("registry.io", "", "", "!!not base64!!", "", "")
	f.Add("registry.io", "", "", b(":"), "", "")
	f.Add("registry.io", "u", "", b("x:y"), "", "")
	f.Add("registry.io", "", "", "", "identity-token", "registry-token")
	f.Add("https://user:hunter22@registry.io/path", "u", "p", "", "", "")
	f.Add("registry.io:port", "u", "hunter22", "", "", "")
	f.Add("[::1]:5000", "u", "p", "", "", "")
	f.Add("*.dkr.ecr.*.amazonaws.com", "AWS", "ecr-password", "", "", "")
	f.Add("", "u", "p", "", "", "")
	f.Add("registry.io/a?b#c", "u", "p", "", "", "")
	f.Fuzz(func(t *testing.T, key, user, pass, auth, idToken, regToken string) {
		e := dockerConfigEntry{Username: user, Password: pass, Auth: auth, IdentityToken: idToken, RegistryToken: regToken}
		for _, dockercfg := range []bool{false, true} {
			var v any = map[string]dockerConfigEntry{key: e}
			if !dockercfg {
				v = dockerConfigJSON{Auths: map[string]dockerConfigEntry{key: e}}
			}
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			// JSON replaces invalid UTF-8: check against what was encoded.
			entries, _ := decodeEntries(dockercfg, data)
			if len(entries) != 1 {
				t.Fatalf("%s encodes %d entries", data, len(entries))
			}
			var encKey string
			var got dockerConfigEntry
			for encKey, got = range entries {
			}
			patterns, problems := secretPatterns([]*corev1.Secret{fuzzSecret(dockercfg, data)})
			checkNoSecretInProblems(t, entries, problems)

			_, keyErr := parseKey(encKey)
			wantUser, wantPass := got.Username, got.Password
			authErr := false
			if got.Auth != "" && got.Username == "" && got.Password == "" {
				raw, err := base64.StdEncoding.DecodeString(got.Auth)
				u, p, ok := strings.Cut(string(raw), ":")
				if err != nil || !ok {
					authErr = true
				}
				wantUser, wantPass = u, p
			}
			empty := wantUser == "" && wantPass == "" && got.IdentityToken == "" && got.RegistryToken == ""
			switch {
			case keyErr != nil || authErr:
				if len(problems) != 1 || len(patterns) != 0 {
					t.Fatalf("key %q: want one problem, got %v and %d patterns", key, problems, len(patterns))
				}
			case empty:
				if len(problems) != 0 || len(patterns) != 0 {
					t.Fatalf("empty entry gave %v and %d patterns", problems, len(patterns))
				}
			default:
				if len(problems) != 0 || len(patterns) != 1 {
					t.Fatalf("key %q: got %v and %d patterns, want one pattern", key, problems, len(patterns))
				}
				c := patterns[0].cred
				if c.Username != wantUser || c.Password != wantPass ||
					c.IdentityToken != got.IdentityToken || c.RegistryToken != got.RegistryToken {
					t.Fatalf("entry %+v gave credential %+v", got, c.Auth)
				}
			}
		}
	})
}

// FuzzDecodeAuth checks the "auth" decoding: base64 of "user:password"
// decodes to exactly that user and password when the user has no colon;
// any other value decodes or is an error without panicking, and an error
// never quotes the value.
func FuzzDecodeAuth(f *testing.F) {
	f.Add("bob", "s3:cr:et", "Ym9iOnMzOmNyOmV0")
	f.Add("", "", "Og==")
	f.Add("user", "", "!!hunter2!!")
	f.Add("a:b", "c", "aHVudGVyMg==")
	f.Add("ü", "\x00", "Ym9iOnMzOmNyOmV0\n")
	f.Fuzz(func(t *testing.T, user, pass, raw string) {
		enc := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		u, p, err := decodeAuth(enc)
		if err != nil {
			t.Fatalf("decodeAuth(%q): %v", enc, err)
		}
		if !strings.Contains(user, ":") && (u != user || p != pass) {
			t.Fatalf("decodeAuth(base64(%q:%q)) = %q, %q", user, pass, u, p)
		}
		if u+":"+p != user+":"+pass {
			t.Fatalf("decodeAuth(base64(%q:%q)) = %q, %q: not the same text", user, pass, u, p)
		}

		u, p, err = decodeAuth(raw)
		dec, decErr := base64.StdEncoding.DecodeString(raw)
		switch {
		case decErr != nil || !strings.Contains(string(dec), ":"):
			if err == nil {
				t.Fatalf("decodeAuth(%q) = %q, %q; want an error", raw, u, p)
			}
			if u != "" || p != "" {
				t.Fatalf("decodeAuth(%q) = %q, %q with an error", raw, u, p)
			}
			if len(raw) >= 4 && strings.Contains(err.Error(), raw) {
				t.Fatalf("decodeAuth error %q quotes the value", err)
			}
		case err != nil:
			t.Fatalf("decodeAuth(%q): %v", raw, err)
		case u+":"+p != string(dec):
			t.Fatalf("decodeAuth(%q) = %q, %q; decodes to %q", raw, u, p, dec)
		}
	})
}
