package cri_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// FuzzParseEndpoint checks --runtime-endpoint parsing. Invariants: no
// panic; deterministic; an error comes with an empty path; an accepted
// endpoint gives an absolute, clean path short enough for a unix socket;
// that path, given again as a path or as a properly escaped unix:// URL,
// parses to itself (a path holding "://" reads as a URL, so only the URL
// form is checked for it).
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{
		"/run/containerd/containerd.sock",
		"unix:///run/crio/crio.sock",
		"unix:///var/run/cri-dockerd.sock",
		"/run//x/../containerd.sock",
		"",
		"tcp://127.0.0.1:1234",
		"npipe:////./pipe/containerd-containerd",
		"unix://run/x.sock",
		"unix://",
		"unix:///",
		"UNIX:///run/x.sock",
		"unix:///run/x%20y.sock",
		"unix:///run/x.sock?timeout=1s#frag",
		"unix:/run/x.sock",
		"containerd.sock",
		"/" + strings.Repeat("x", 120) + ".sock",
		"/" + strings.Repeat("x", 106),
		"/a://b",
		"unix:///a://b",
		"://",
		"unix://%zz/x",
		"/run/\x00.sock",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		path, err := cri.ParseEndpoint(endpoint)
		path2, err2 := cri.ParseEndpoint(endpoint)
		if path != path2 || (err == nil) != (err2 == nil) {
			t.Fatalf("ParseEndpoint(%q) is not deterministic", endpoint)
		}
		if err != nil {
			if path != "" {
				t.Fatalf("ParseEndpoint(%q) = %q with error %v", endpoint, path, err)
			}
			return
		}
		if !filepath.IsAbs(path) || filepath.Clean(path) != path || len(path) >= 108 {
			t.Fatalf("ParseEndpoint(%q) = %q: not a clean absolute path under 108 bytes", endpoint, path)
		}
		if !strings.Contains(path, "://") {
			if again, err := cri.ParseEndpoint(path); err != nil || again != path {
				t.Fatalf("ParseEndpoint(%q) = %q, %v; want itself", path, again, err)
			}
		}
		u := (&url.URL{Scheme: "unix", Path: path}).String()
		if again, err := cri.ParseEndpoint(u); err != nil || again != path {
			t.Fatalf("ParseEndpoint(%q) = %q, %v; want %q", u, again, err, path)
		}
	})
}
