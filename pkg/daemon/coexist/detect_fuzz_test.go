package coexist

import (
	"path"
	"strings"
	"testing"

	"github.com/nodekruise/kruise/pkg/contract/imageref"
)

// FuzzImageRepoBase checks how the coexistence guard names the image of
// another pod's container (any text: it comes from a pod spec). Invariants:
// no panic; the result holds no "/" nor "@"; and for a reference
// imageref.Split accepts it is the last path element of its repository.
func FuzzImageRepoBase(f *testing.F) {
	for _, s := range []string{
		"openkruise/kruise-manager:v1.9.0", "reg:5000/openkruise/kruise-manager:v1.9.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"kruise-daemon", "reg:5000/kruise-daemon", "", "@", ":", "/", "a:b/c", "a/b:c@d:e/f", "x@y/z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		got := imageRepoBase(image)
		if strings.ContainsAny(got, "/@") {
			t.Fatalf("imageRepoBase(%q) = %q", image, got)
		}
		if repo, _, err := imageref.Split(image); err == nil {
			if want := path.Base(repo); got != want {
				t.Fatalf("imageRepoBase(%q) = %q, want %q", image, got, want)
			}
		}
	})
}
