package credentials

import (
	"reflect"
	"strings"
	"testing"
)

// hasScheme reports whether s starts with the http(s) scheme parseLocation
// strips, in any case.
func hasScheme(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// upperHost upper-cases the ASCII letters of the host part of s (before the
// first "/", "?" or "#"), leaving the rest alone.
func upperHost(s string) string {
	end := strings.IndexAny(s, "/?#")
	if end < 0 {
		end = len(s)
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s[:end]) + s[end:]
}

// FuzzMatchImageEquivalences complements FuzzMatchImage (match_test.go)
// with equivalences the kubelet's matching rule implies. For any pattern
// and image: the answer is deterministic; an invalid pattern matches
// nothing; an http:// or https:// scheme (any case) in front of either
// changes nothing; neither does the case of the host; and a match still
// holds for a longer path.
func FuzzMatchImageEquivalences(f *testing.F) {
	for _, tc := range matchImageCases {
		f.Add(tc.pattern, tc.image)
	}
	f.Add("docker.io", "docker.io/library/nginx")
	f.Add("*.*", "registry.io/app%2fx")
	f.Add("registry.io/a%", "registry.io/a%25")
	f.Add("registry.io:0", "registry.io:0/x")
	f.Add("registry.io:", "registry.io:/x")
	f.Add("[fe80::1%25en0]:5000", "[fe80::1%25en0]:5000/app")
	f.Add("xn--bcher-kva.example", "XN--BCHER-KVA.example/app")
	f.Add("*", "*/app")
	f.Add("a\\.io", "a.io/x")
	f.Add("https://", "https://")
	f.Add("HTTPS://Registry.IO/Team", "registry.io/Team/app")
	f.Fuzz(func(t *testing.T, pattern, image string) {
		got := MatchImage(pattern, image)
		if MatchImage(pattern, image) != got {
			t.Fatalf("MatchImage(%q, %q) is not deterministic", pattern, image)
		}
		if ValidatePattern(pattern) != nil && got {
			t.Fatalf("invalid pattern %q matches %q", pattern, image)
		}
		if !hasScheme(image) {
			for _, scheme := range []string{"https://", "http://", "HTTPS://"} {
				if MatchImage(pattern, scheme+image) != got {
					t.Fatalf("MatchImage(%q, %q) = %t, but %t with scheme %s", pattern, image, got, !got, scheme)
				}
			}
			if MatchImage(pattern, upperHost(image)) != got {
				t.Fatalf("MatchImage(%q, %q) = %t, but %t for %q", pattern, image, got, !got, upperHost(image))
			}
		}
		if !hasScheme(pattern) {
			for _, scheme := range []string{"https://", "Http://"} {
				if MatchImage(scheme+pattern, image) != got {
					t.Fatalf("MatchImage(%q, %q) = %t, but %t with scheme %s", pattern, image, got, !got, scheme)
				}
			}
			if MatchImage(upperHost(pattern), image) != got {
				t.Fatalf("MatchImage(%q, %q) = %t, but %t for pattern %q", pattern, image, got, !got, upperHost(pattern))
			}
		}
		if got && !MatchImage(pattern, image+"/more") {
			t.Fatalf("%q matches %q but not %q", pattern, image, image+"/more")
		}
	})
}

// FuzzParseImageIdempotent checks the normalisation of image references
// (what plugins receive as the request's image): no panic; an accepted
// reference gives a repository "registry/path" whose registry is lower
// case and which normalises to itself; adding a tag or a digest to it
// changes nothing; and a rejected reference is an error with a zero value.
func FuzzParseImageIdempotent(f *testing.F) {
	for _, s := range []string{
		"nginx", "nginx:1.27", "user/app", "docker.io/nginx", "index.docker.io/user/app:v1",
		"localhost/app", "localhost:5000/app:tag", "gcr.io/a/b@sha256:0123abcd", "gcr.io/a/b:v1@sha256:0123abcd",
		"Registry.IO/app", "Foo/bar", "LOCALHOST/app", "[::1]:5000/app", "a/b:c/d", "a:b/c", "docker.io",
		"", "gcr.io/", "a b", "https://gcr.io/app", "gcr.io/app?x", "gcr.io/app#x", "@sha256:00", ":tag", "/app",
		"a//b", "a/%zz", "ümlaut.io/app", "index.docker.io/library/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		ref, err := parseImage(image)
		if err != nil {
			if !reflect.DeepEqual(ref, imageRef{}) {
				t.Fatalf("parseImage(%q) = %+v with error %v", image, ref, err)
			}
			return
		}
		if ref.repo == "" || ref.registry == "" || !strings.HasPrefix(ref.repo, ref.registry+"/") {
			t.Fatalf("parseImage(%q) = repo %q, registry %q", image, ref.repo, ref.registry)
		}
		if strings.ToLower(ref.registry) != ref.registry && (strings.ContainsAny(ref.registry, ".:") || strings.EqualFold(ref.registry, "localhost")) {
			t.Fatalf("parseImage(%q): registry %q is not lower case", image, ref.registry)
		}
		for _, again := range []string{ref.repo, ref.repo + ":v1", ref.repo + "@sha256:0123abcd", ref.repo + ":v1@sha256:0123abcd"} {
			ref2, err := parseImage(again)
			if err != nil {
				t.Fatalf("parseImage(%q) = %q, which does not parse: %v", image, again, err)
			}
			if ref2.repo != ref.repo || ref2.registry != ref.registry {
				t.Fatalf("parseImage(%q) = %q (%q), but parseImage(%q) = %q (%q)",
					image, ref.repo, ref.registry, again, ref2.repo, ref2.registry)
			}
		}
	})
}
