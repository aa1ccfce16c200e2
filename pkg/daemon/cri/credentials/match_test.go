package credentials

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var matchImageCases = []struct {
	name    string
	pattern string
	image   string
	want    bool
}{
	{"ecr globs", "*.dkr.ecr.*.amazonaws.com", "123.dkr.ecr.us-east-1.amazonaws.com/app", true},
	{"ecr extra label", "*.dkr.ecr.*.amazonaws.com", "123.dkr.ecr.us-east-1.amazonaws.com.cn/app", false},
	{"exact host", "gcr.io", "gcr.io/project/app", true},
	{"other host", "gcr.io", "quay.io/project/app", false},
	{"glob is one label", "*.io", "k8s.gcr.io/app", false},
	{"glob subdomain", "*.k8s.io", "registry.k8s.io/pause", true},
	{"glob tld", "k8s.*", "k8s.io/pause", true},
	{"partial label glob", "app*.k8s.io", "app1.k8s.io/x", true},
	{"partial label glob mismatch", "app*.k8s.io", "web.k8s.io/x", false},
	{"port equal", "registry.io:8080", "registry.io:8080/app", true},
	{"port in pattern only", "registry.io:8080", "registry.io/app", false},
	{"port in image only", "registry.io", "registry.io:8080/app", false},
	{"port differs", "registry.io:8080", "registry.io:9090/app", false},
	{"path prefix", "registry.io/team", "registry.io/team/app", true},
	{"path other", "registry.io/team", "registry.io/other/app", false},
	{"path string prefix like the kubelet", "registry.io/team", "registry.io/teamx/app", true},
	{"path longer than image", "registry.io/team/app/more", "registry.io/team/app", false},
	{"pattern path, image without path", "gcr.io/path", "gcr.io", false},
	{"star vs host with port", "*", "localhost:5000/app", false},
	{"star vs one-label host", "*", "localhost/app", true},
	{"star with port", "*:5000", "localhost:5000/app", true},
	{"star vs two labels", "*", "registry.io:5000/app", false},
	{"uppercase pattern", "GCR.io", "gcr.io/app", true},
	{"uppercase image host", "gcr.io", "GCR.IO/app", true},
	{"https scheme", "https://registry.io", "registry.io/app", true},
	{"http scheme", "http://registry.io:5000/v2", "registry.io:5000/v2/app", true},
	{"invalid glob", "[.io", "a.io/app", false},
	{"invalid port", "registry.io:abc", "registry.io/app", false},
	{"empty pattern", "", "registry.io/app", false},
	{"ipv6 host", "[::1]:5000", "[::1]:5000/app", true},
}

func TestMatchImage(t *testing.T) {
	for _, tc := range matchImageCases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, MatchImage(tc.pattern, tc.image), "MatchImage(%q, %q)", tc.pattern, tc.image)
		})
	}
}

func TestValidatePattern(t *testing.T) {
	for _, p := range []string{"gcr.io", "*.azurecr.io", "*.*.registry.io", "registry.io:8080/path", "https://quay.io/team", "k8s.*"} {
		assert.NoError(t, ValidatePattern(p), p)
	}
	for _, p := range []string{"", "[a.io", "a.io:port", "a?.io", "a.io/x#frag", "user@a.io", "https://"} {
		assert.Error(t, ValidatePattern(p), p)
	}
}

func TestParseImage(t *testing.T) {
	cases := []struct {
		image, repo, registry string
	}{
		{"nginx", "docker.io/library/nginx", "docker.io"},
		{"nginx:1.27", "docker.io/library/nginx", "docker.io"},
		{"user/app", "docker.io/user/app", "docker.io"},
		{"docker.io/nginx", "docker.io/library/nginx", "docker.io"},
		{"index.docker.io/user/app:v1", "docker.io/user/app", "docker.io"},
		{"localhost/app", "localhost/app", "localhost"},
		{"localhost:5000/app:tag", "localhost:5000/app", "localhost:5000"},
		{"gcr.io/a/b@sha256:0123abcd", "gcr.io/a/b", "gcr.io"},
		{"gcr.io/a/b:v1@sha256:0123abcd", "gcr.io/a/b", "gcr.io"},
		{"Registry.IO/app", "registry.io/app", "registry.io"},
	}
	for _, tc := range cases {
		img, err := parseImage(tc.image)
		require.NoError(t, err, tc.image)
		assert.Equal(t, tc.repo, img.repo, tc.image)
		assert.Equal(t, tc.registry, img.registry, tc.image)
	}
	for _, bad := range []string{"", "gcr.io/", "a b", "https://gcr.io/app", "gcr.io/app?x"} {
		_, err := parseImage(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// hasGlob reports whether s holds a filepath.Match metacharacter.
func hasGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

func FuzzMatchImage(f *testing.F) {
	for _, tc := range matchImageCases {
		f.Add(tc.pattern, tc.image)
	}
	f.Add("docker.io", "nginx:latest")
	f.Add("*.*", "user/app@sha256:00")
	f.Fuzz(func(t *testing.T, pattern, image string) {
		got := MatchImage(pattern, image) // must not panic
		if got {
			// A match implies both parse, with as many labels and the same port.
			p, err := parsePattern(pattern)
			require.NoError(t, err)
			img, err := parseLocation(image)
			require.NoError(t, err)
			require.Len(t, p.labels, len(img.labels))
			require.Equal(t, p.port, img.port)
		}

		ref, err := parseImage(image) // must not panic
		if err != nil {
			return
		}
		// The normalised repository is itself a valid location...
		require.True(t, strings.HasPrefix(ref.repo, ref.registry+"/"))
		// ...matched by its own registry host, and by itself.
		if !hasGlob(ref.registry) {
			require.True(t, MatchImage(ref.registry, ref.repo), "host %q must match %q", ref.registry, ref.repo)
			require.True(t, MatchImage(ref.repo, ref.repo), "%q must match itself", ref.repo)
		}
		// A pattern of one "*" per host label with the image's port matches.
		stars := strings.TrimSuffix(strings.Repeat("*.", len(ref.loc.labels)), ".")
		if ref.loc.port != "" {
			stars += ":" + ref.loc.port
		}
		require.True(t, MatchImage(stars, ref.repo), "%q must match %q", stars, ref.repo)
		// One label more or less never matches.
		require.False(t, MatchImage("*."+stars, ref.repo))
	})
}
