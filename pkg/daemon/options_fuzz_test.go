package daemon

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// FuzzResolveSocketFile checks OpenKruise's --socket-file, a path under
// --host-run-dir. Invariants: no panic; deterministic; an accepted value
// gives a --runtime-endpoint that parses to a socket path under the host
// run directory, whatever escapes, dots or URL syntax the value holds, and
// that resolving again (Validate may run twice) keeps it; a refused value
// leaves --runtime-endpoint alone.
func FuzzResolveSocketFile(f *testing.F) {
	for _, s := range []string{
		"criproxy.sock", "k3s/containerd/containerd.sock", "./containerd//containerd.sock", "/run/x.sock",
		"../run/containerd.sock", "a/../../b.sock", ".", "a/..", "x%2F..%2F..%2Fetc%2Fshadow", "%2e%2e/x.sock",
		"x.sock?y", "x.sock#y", "a://b", "a b.sock", "%", strings.Repeat("d/", 60) + "x.sock",
	} {
		f.Add("/hostvarrun", s)
	}
	f.Add("/var/run", "containerd/containerd.sock")
	f.Add("", "x.sock")
	f.Add("relative", "x.sock")
	f.Fuzz(func(t *testing.T, hostRunDir, socketFile string) {
		o := &Options{HostRunDir: hostRunDir, SocketFile: socketFile}
		err := o.resolveSocketFile()
		o2 := &Options{HostRunDir: hostRunDir, SocketFile: socketFile}
		if err2 := o2.resolveSocketFile(); (err == nil) != (err2 == nil) || o.RuntimeEndpoint != o2.RuntimeEndpoint {
			t.Fatalf("resolveSocketFile is not deterministic")
		}
		if err != nil {
			if o.RuntimeEndpoint != "" {
				t.Fatalf("refused %q set --runtime-endpoint %q", socketFile, o.RuntimeEndpoint)
			}
			return
		}
		if socketFile == "" {
			if o.RuntimeEndpoint != "" {
				t.Fatalf("no --socket-file set --runtime-endpoint %q", o.RuntimeEndpoint)
			}
			return
		}
		path, err := cri.ParseEndpoint(o.RuntimeEndpoint)
		if err != nil {
			t.Fatalf("--socket-file %q gave endpoint %q, which does not parse: %v", socketFile, o.RuntimeEndpoint, err)
		}
		dir := filepath.Clean(hostRunDir)
		if filepath.IsAbs(dir) && path != dir && !strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/") {
			t.Fatalf("--host-run-dir %q --socket-file %q gave socket %q, outside the run directory", hostRunDir, socketFile, path)
		}
		if want := filepath.Join(hostRunDir, socketFile); filepath.IsAbs(want) && path != want {
			t.Fatalf("--host-run-dir %q --socket-file %q gave socket %q, want %q", hostRunDir, socketFile, path, want)
		}
		before := o.RuntimeEndpoint
		if err := o.resolveSocketFile(); err != nil || o.RuntimeEndpoint != before {
			t.Fatalf("resolving again: %v, endpoint %q then %q", err, before, o.RuntimeEndpoint)
		}
	})
}
