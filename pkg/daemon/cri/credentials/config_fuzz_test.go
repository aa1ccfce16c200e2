//go:build unix

package credentials

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzLoadPlugins loads arbitrary CredentialProviderConfig files (YAML or
// JSON) against a bin directory holding the executables "ecr" and "acr".
// Invariants: no panic (in particular, every matchImages pattern that
// passes validation parses again when the providers are built); the result
// is deterministic; it loads exactly when decodeConfig and validateConfig
// both accept it, and then has one provider per config entry, in order,
// with their matchImages, env and args, and a non-negative default cache
// duration.
func FuzzLoadPlugins(f *testing.F) {
	bin := f.TempDir()
	for _, name := range []string{"ecr", "acr"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	cfgPath := filepath.Join(f.TempDir(), "config")

	acr := `
  - name: acr
    matchImages: ["*.azurecr.io", "registry.io:8080/path", "https://quay.io/team", "[::1]:5000"]
    defaultCacheDuration: 0s
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: ["--v=2"]
    env:
      - name: AZURE_ENV
        value: x
`
	for _, seed := range []string{
		configHeader + validProvider,
		configHeader + validProvider + acr,
		`{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig",` +
			`"providers":[{"name":"ecr","matchImages":["*.dkr.ecr.*.amazonaws.com"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}`,
		"providers: [",
		strings.Replace(configHeader, "kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v1beta1", 1) + validProvider,
		configHeader + validProvider + "    matchImage: [x.io]\n",
		configHeader + " []\n",
		configHeader + validProvider + validProvider,
		configHeader + strings.Replace(validProvider, "name: ecr", "name: ../ecr", 1),
		configHeader + strings.Replace(validProvider, "name: ecr", "name: noexec", 1),
		configHeader + strings.Replace(validProvider, `"*.dkr.ecr.*.amazonaws.com"`, `"[bad.io", "a.io:port", "", "user@a.io", "a.io/x#f", "a.io?q"`, 1),
		configHeader + strings.Replace(validProvider, "12h", "-1m", 1),
		configHeader + strings.Replace(validProvider, "12h", "2562047h47m16.854775807s", 1),
		configHeader + strings.Replace(validProvider, "12h", "99999999999999h", 1),
		configHeader + strings.Replace(validProvider, "defaultCacheDuration: 12h", "", 1),
		configHeader + strings.Replace(validProvider, "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1beta1", 1),
		configHeader + validProvider + "    env: [{name: \"A=B\", value: x}, {name: \"\", value: y}]\n",
		configHeader + validProvider + "    tokenAttributes: {serviceAccountTokenAudience: aud, requireServiceAccount: true}\n",
		"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nkind: CredentialProviderConfig\nproviders: []\n",
		"a: &a [*a, *a]\n",
		"a: &a [x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c]\n",
		"",
		"null",
		"\t",
		"[]",
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ps, err := LoadPlugins(cfgPath, bin)
		ps2, err2 := LoadPlugins(cfgPath, bin)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("not deterministic: %v, then %v", err, err2)
		}

		cfg, decodeErr := decodeConfig(data)
		wantOK := decodeErr == nil && validateConfig(cfg, bin) == nil
		switch {
		case wantOK && err != nil:
			t.Fatalf("a config that decodes and validates does not load: %v", err)
		case !wantOK && err == nil:
			t.Fatalf("a config that does not decode or validate loads")
		case err != nil:
			if ps != nil {
				t.Fatalf("error %v with plugins", err)
			}
			if !strings.HasPrefix(err.Error(), "credential provider config") {
				t.Fatalf("error %q does not say what it is about", err)
			}
			return
		}

		if len(ps.providers) != len(cfg.Providers) || len(ps2.providers) != len(cfg.Providers) {
			t.Fatalf("%d providers in the config, %d loaded", len(cfg.Providers), len(ps.providers))
		}
		for i, c := range cfg.Providers {
			p := ps.providers[i]
			if p.name != c.Name || p.path != filepath.Join(bin, c.Name) {
				t.Fatalf("provider %d: name %q path %q, config name %q", i, p.name, p.path, c.Name)
			}
			if len(p.matchImages) != len(c.MatchImages) || len(p.env) != len(c.Env) || len(p.args) != len(c.Args) {
				t.Fatalf("provider %q lost matchImages, env or args", c.Name)
			}
			if p.defaultCacheDuration < 0 || p.timeout != DefaultPluginTimeout || p.cache == nil {
				t.Fatalf("provider %q: cache duration %v, timeout %v", c.Name, p.defaultCacheDuration, p.timeout)
			}
			if p.needsToken != (c.TokenAttributes != nil) {
				t.Fatalf("provider %q: needsToken %t", c.Name, p.needsToken)
			}
			for j, m := range c.MatchImages {
				loc, err := parsePattern(m)
				if err != nil {
					t.Fatalf("provider %q loaded with invalid pattern %q: %v", c.Name, m, err)
				}
				if !reflect.DeepEqual(loc, p.matchImages[j]) {
					t.Fatalf("pattern %q parsed as %+v, loaded as %+v", m, loc, p.matchImages[j])
				}
			}
		}
	})
}
