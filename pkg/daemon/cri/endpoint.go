package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultHostRunDir is where runtimes put their sockets on the host. The
// DaemonSet mounts the host's /var/run at /hostvarrun and passes that instead.
const DefaultHostRunDir = "/var/run"

// DefaultProbeTimeout bounds one CRI Version call while probing a socket.
const DefaultProbeTimeout = 3 * time.Second

// CandidateSockets are probed, in this order, under the host run directory
// when no endpoint is given: containerd, CRI-O, then cri-dockerd.
var CandidateSockets = []string{
	"containerd/containerd.sock",
	"containerd.sock",
	"crio/crio.sock",
	"crio.sock",
	"cri-dockerd.sock",
}

// maxUnixPathLen is the size of sun_path on Linux, including the final NUL.
const maxUnixPathLen = 108

// ParseEndpoint turns a unix socket path or unix:// URL into a path.
// Other schemes (tcp, npipe) are rejected: the daemon only talks to the
// runtime of its own node.
func ParseEndpoint(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("empty CRI endpoint")
	}
	path := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", fmt.Errorf("parsing CRI endpoint %q: %w", endpoint, err)
		}
		if u.Scheme != "unix" {
			return "", fmt.Errorf("CRI endpoint %q: unsupported scheme %q, only unix sockets are supported", endpoint, u.Scheme)
		}
		// unix:///run/x.sock has an empty host; unix://run/x.sock is a
		// common typo for a relative path that we refuse below.
		path = u.Host + u.Path
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("CRI endpoint %q: socket path must be absolute", endpoint)
	}
	path = filepath.Clean(path)
	if len(path) >= maxUnixPathLen {
		return "", fmt.Errorf("CRI endpoint %q: socket path is %d bytes, unix sockets allow at most %d", endpoint, len(path), maxUnixPathLen-1)
	}
	return path, nil
}

// DiscoverOptions says where to find the runtime.
type DiscoverOptions struct {
	// Endpoint, when set, is the only socket tried (path or unix:// URL).
	Endpoint string
	// HostRunDir is the directory the candidate sockets are probed under;
	// empty means DefaultHostRunDir.
	HostRunDir string
	// ProbeTimeout bounds the Version call on each socket; zero means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Metrics, when set, times and counts every CRI call of the returned
	// Runtime (probe calls included).
	Metrics *Metrics
	// CallTimeout bounds each call of the returned Runtime that has no
	// deadline of its own; zero means DefaultCallTimeout.
	CallTimeout time.Duration
}

// Attempt records why one socket was not used.
type Attempt struct {
	Path string
	Err  error
}

// DiscoveryError lists every socket tried and why each failed.
type DiscoveryError struct {
	Explicit bool
	Dir      string
	Attempts []Attempt
}

func (e *DiscoveryError) Error() string {
	var b strings.Builder
	if e.Explicit {
		b.WriteString("container runtime endpoint from --runtime-endpoint is not usable")
	} else {
		fmt.Fprintf(&b, "no CRI runtime found under %s (set --runtime-endpoint to choose one)", e.Dir)
	}
	b.WriteString("; tried:")
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, " [%s: %v]", a.Path, a.Err)
	}
	return b.String()
}

// Unwrap exposes the individual failures to errors.Is / errors.As.
func (e *DiscoveryError) Unwrap() []error {
	errs := make([]error, 0, len(e.Attempts))
	for _, a := range e.Attempts {
		errs = append(errs, a.Err)
	}
	return errs
}

// ErrNoSocket marks a candidate path that does not exist.
var ErrNoSocket = errors.New("no such socket")

// ErrNotSocket marks a candidate path that exists but is not a unix socket.
var ErrNotSocket = errors.New("exists but is not a unix socket")

// Discover finds and connects the node's container runtime. An explicit
// endpoint wins; otherwise CandidateSockets are probed in order under the
// host run directory. A socket counts when it exists, is a socket, and
// answers CRI Version. The returned DiscoveryError lists every attempt.
func Discover(ctx context.Context, opts DiscoverOptions) (Runtime, VersionInfo, error) {
	timeout := opts.ProbeTimeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	dc := dialConfig{metrics: opts.Metrics, callTimeout: opts.CallTimeout}
	if opts.Endpoint != "" {
		path, err := ParseEndpoint(opts.Endpoint)
		if err != nil {
			return nil, VersionInfo{}, err
		}
		rt, info, err := probe(ctx, path, timeout, dc)
		if err != nil {
			return nil, VersionInfo{}, &DiscoveryError{Explicit: true, Attempts: []Attempt{{Path: path, Err: err}}}
		}
		return rt, info, nil
	}

	dir := opts.HostRunDir
	if dir == "" {
		dir = DefaultHostRunDir
	}
	derr := &DiscoveryError{Dir: dir}
	for _, name := range CandidateSockets {
		if err := ctx.Err(); err != nil {
			return nil, VersionInfo{}, fmt.Errorf("discovering CRI runtime: %w", err)
		}
		path := filepath.Join(dir, name)
		rt, info, err := probe(ctx, path, timeout, dc)
		if err == nil {
			return rt, info, nil
		}
		derr.Attempts = append(derr.Attempts, Attempt{Path: path, Err: err})
	}
	return nil, VersionInfo{}, derr
}

// probe checks one socket path: exists, is a socket, answers Version.
func probe(ctx context.Context, path string, timeout time.Duration, dc dialConfig) (Runtime, VersionInfo, error) {
	if len(path) >= maxUnixPathLen {
		return nil, VersionInfo{}, fmt.Errorf("socket path is %d bytes, unix sockets allow at most %d", len(path), maxUnixPathLen-1)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, VersionInfo{}, ErrNoSocket
	case err != nil:
		return nil, VersionInfo{}, err
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, VersionInfo{}, fmt.Errorf("%w (mode %s)", ErrNotSocket, fi.Mode().Type())
	}
	return connectPath(ctx, path, timeout, dc)
}
