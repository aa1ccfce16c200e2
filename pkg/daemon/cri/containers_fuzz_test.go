package cri

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseRestartCount checks the reading of the kubelet's
// io.kubernetes.container.restartCount annotation, which tells container
// instances apart. Invariants: no panic; a value is accepted exactly when
// it is a base-10 integer in [0, MaxInt32], and then gives that number; a
// missing or other value is an ErrBadRestartCount error with 0, never a
// silent 0.
func FuzzParseRestartCount(f *testing.F) {
	for _, s := range []string{"0", "1", "42", "2147483647", "2147483648", "-1", "", " 1", "1 ", "+1", "01", "0x10", "1e3", "１", "9999999999999999999999"} {
		f.Add(s, true)
	}
	f.Add("", false)
	f.Fuzz(func(t *testing.T, v string, present bool) {
		ann := map[string]string{"other": "1"}
		if present {
			ann[AnnotationRestartCount] = v
		}
		n, err := parseRestartCount(ann)
		want, perr := strconv.ParseInt(v, 10, 32)
		ok := present && perr == nil && want >= 0
		switch {
		case ok && (err != nil || int64(n) != want):
			t.Fatalf("parseRestartCount(%q) = %d, %v; want %d", v, n, err, want)
		case !ok && err == nil:
			t.Fatalf("parseRestartCount(%q, present %t) = %d without an error", v, present, n)
		case !ok && (n != 0 || !errors.Is(err, ErrBadRestartCount)):
			t.Fatalf("parseRestartCount(%q) = %d, %v; want 0 and ErrBadRestartCount", v, n, err)
		}
	})
}

// FuzzRawContainerID checks the stripping of the "<runtime>://" prefix of
// pod-status container IDs: an ID with a runtime prefix gives back what
// follows the first "://", one without is returned unchanged.
func FuzzRawContainerID(f *testing.F) {
	for _, s := range []string{"containerd://abc", "cri-o://0123", "docker://x", "abc", "", "://", "a://b://c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got := RawContainerID(id)
		_, raw, found := strings.Cut(id, "://")
		switch {
		case !found && got != id:
			t.Fatalf("RawContainerID(%q) = %q; want it unchanged", id, got)
		case found && got != raw:
			t.Fatalf("RawContainerID(%q) = %q; want %q", id, got, raw)
		}
		if RawContainerID("containerd://"+id) != id {
			t.Fatalf("RawContainerID(containerd://%q) = %q", id, RawContainerID("containerd://"+id))
		}
	})
}
