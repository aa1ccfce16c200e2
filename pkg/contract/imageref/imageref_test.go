package imageref

import "testing"

func TestSplitJoin(t *testing.T) {
	tests := []struct {
		in, repo, tag, joined string
	}{
		{"busybox", "busybox", "latest", "busybox:latest"},
		{"busybox:1.36", "busybox", "1.36", "busybox:1.36"},
		{"127.0.0.1:5000/public/busybox", "127.0.0.1:5000/public/busybox", "latest", "127.0.0.1:5000/public/busybox:latest"},
		{"127.0.0.1:5000/public/busybox:1.35", "127.0.0.1:5000/public/busybox", "1.35", "127.0.0.1:5000/public/busybox:1.35"},
		{"docker.io/library/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"docker.io/library/nginx", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"docker.io/library/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"reg:5000/app:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"reg:5000/app", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"reg:5000/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	}
	for _, tc := range tests {
		repo, tag, err := Split(tc.in)
		if err != nil || repo != tc.repo || tag != tc.tag {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", tc.in, repo, tag, err, tc.repo, tc.tag)
			continue
		}
		if got := Join(repo, tag); got != tc.joined {
			t.Errorf("Join(%q, %q) = %q, want %q", repo, tag, got, tc.joined)
		}
	}
}

func TestSplitInvalid(t *testing.T) {
	for _, in := range []string{"", "UPPER/case", "a b", "busybox:", "::"} {
		if _, _, err := Split(in); err == nil {
			t.Errorf("Split(%q): want an error", in)
		}
	}
}
