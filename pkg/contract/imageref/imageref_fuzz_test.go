package imageref

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// distributionComponent is a repository path component as
// distribution/reference defines it.
var distributionComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)

// FuzzSplit checks Split on arbitrary references (ImagePullJob.spec.image,
// NodeImage keys): it never panics; a rejected reference is an error with
// empty parts, never a silent zero value; an accepted one has a non-empty
// name and tag whose path components follow the runtimes' grammar, and
// Join gives back a reference that Split returns the same
// parts for and that names the same repository and tag or digest as the
// input (a reference with both a tag and a digest keeps the digest, which
// is what the runtime pulls).
func FuzzSplit(f *testing.F) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, s := range []string{
		"busybox",
		"busybox:1.36",
		"library/busybox:latest",
		"docker.io/library/nginx:1.25",
		"index.docker.io/library/nginx",
		"127.0.0.1:5000/public/busybox",
		"127.0.0.1:5000/public/busybox:1.35",
		"localhost:5000/app",
		"[::1]:5000/app:v1",
		"registry.example.com:443/a/b/c/d:v1.2.3-rc.1",
		"docker.io/library/nginx@" + digest,
		"reg:5000/app:v1@" + digest,
		"app@" + digest,
		"app@sha256:short",
		"app@@" + digest,
		"UPPER/case",
		"busybox:",
		":tag",
		"@" + digest,
		"a b",
		"::",
		"",
		"a/",
		"/a",
		"a//b",
		"a:b:c",
		"a:5000",
		"a.io/b:" + strings.Repeat("t", 129),
		"\x00",
		"ümlaut/app",
		"-app",
		"app-",
		"a__b/c--d/e.f_g",
		"a...b",
		"0000000000/",
		"reg.io/a//b:v1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		repo, tag, err := Split(image)
		if err != nil {
			if repo != "" || tag != "" {
				t.Fatalf("Split(%q) = %q, %q with error %v: want empty parts", image, repo, tag, err)
			}
			return
		}
		if repo == "" || tag == "" {
			t.Fatalf("Split(%q) = %q, %q without an error", image, repo, tag)
		}
		// Every path component follows the runtimes' grammar
		// (distribution/reference), which go-containerregistry's weak
		// validation does not check.
		path := repo
		if first, rest, ok := strings.Cut(repo, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
			path = rest
		}
		for _, c := range strings.Split(path, "/") {
			if !distributionComponent.MatchString(c) {
				t.Fatalf("Split(%q) accepts repository %q with path component %q", image, repo, c)
			}
		}
		if IsDigest(tag) != strings.Contains(image, "@") {
			t.Fatalf("Split(%q): tag %q, IsDigest %t, but the reference has a digest: %t", image, tag, IsDigest(tag), strings.Contains(image, "@"))
		}
		joined := Join(repo, tag)
		repo2, tag2, err := Split(joined)
		if err != nil || repo2 != repo || tag2 != tag {
			t.Fatalf("Split(Join(%q, %q) = %q) = %q, %q, %v; want the same parts", repo, tag, joined, repo2, tag2, err)
		}
		if Join(repo2, tag2) != joined {
			t.Fatalf("Join is not stable: %q then %q", joined, Join(repo2, tag2))
		}

		orig, err := name.ParseReference(image, name.WeakValidation)
		if err != nil {
			t.Fatalf("Split accepted %q, which does not parse: %v", image, err)
		}
		back, err := name.ParseReference(joined, name.WeakValidation)
		if err != nil {
			t.Fatalf("Join(%q, %q) = %q does not parse: %v", repo, tag, joined, err)
		}
		if orig.Context().Name() != back.Context().Name() {
			t.Fatalf("%q names repository %q, rejoined %q names %q", image, orig.Context().Name(), joined, back.Context().Name())
		}
		if orig.Identifier() != back.Identifier() {
			t.Fatalf("%q names %q, rejoined %q names %q", image, orig.Identifier(), joined, back.Identifier())
		}
	})
}
