package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hangFeatures is what the hang file's ".features" companion says: the rule fields understood.
const hangFeatures = `{"ruleFields":["methods","clients","podNamespaces","anyOf"]}`

// hangPollInterval is how often the hang file is read.
const hangPollInterval = 100 * time.Millisecond

// hangRules is the content of the hang file: which calls the proxy holds
// without answering. A call is held when its method and its client both
// match; an empty list matches everything.
type hangRules struct {
	// Methods are CRI method names, bare ("ListContainers") or full
	// ("/runtime.v1.RuntimeService/ListContainers").
	Methods []string `json:"methods,omitempty"`
	// Clients are process names (/proc/PID/comm, e.g. "kruise-daemon") of
	// the callers, found from the connection's peer credentials.
	Clients []string `json:"clients,omitempty"`
	// PodNamespaces, when set, narrow the rule to calls about a pod of one
	// of these namespaces: RunPodSandbox and CreateContainer, whose
	// requests carry the pod sandbox's metadata. A test can then hold the
	// kubelet's work on its own pods without stalling the other tests'.
	PodNamespaces []string `json:"podNamespaces,omitempty"`
}

// hangFile is the whole hang file: one rule, or with "anyOf" a list of rules of which any one
// holds a call. Tests that run in parallel each add their own rule to the list, so one test's
// rule never replaces another's.
type hangFile struct {
	hangRules
	// AnyOf, when present (even empty), is used instead of the top-level rule fields.
	AnyOf []hangRules `json:"anyOf,omitempty"`
}

func (f *hangFile) holds(method string, c client, podNamespace string) bool {
	if f == nil {
		return false
	}
	if f.AnyOf == nil {
		return f.hangRules.holds(method, c, podNamespace)
	}
	for i := range f.AnyOf {
		if f.AnyOf[i].holds(method, c, podNamespace) {
			return true
		}
	}
	return false
}

func (r *hangRules) holds(method string, c client, podNamespace string) bool {
	if r == nil {
		return false
	}
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) && !slices.Contains(r.Methods, path.Base(method)) {
		return false
	}
	if len(r.PodNamespaces) > 0 && (podNamespace == "" || !slices.Contains(r.PodNamespaces, podNamespace)) {
		return false
	}
	return len(r.Clients) == 0 || slices.Contains(r.Clients, c.comm)
}

// hangControl reads the hang file and tells held calls when it changed.
// Once it has taken in a change it writes the file's content to the file
// plus ".applied" (removing that when the file is gone), so that a test
// knows when its rules are in force.
type hangControl struct {
	file string

	mu      sync.Mutex
	rules   *hangFile
	raw     []byte
	changed chan struct{}
}

func newHangControl(file string) *hangControl {
	return &hangControl{file: file, changed: make(chan struct{})}
}

// current returns the rules in force (nil: hold nothing) and a channel
// closed when they change.
func (h *hangControl) current() (*hangFile, <-chan struct{}) {
	if h == nil {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rules, h.changed
}

// run reads the file every hangPollInterval until ctx ends.
func (h *hangControl) run(ctx context.Context) {
	// What a previous run applied is not in force any more.
	if err := os.Remove(h.file + ".applied"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		slog.Error("removing the applied hang rules of a previous run", "err", err)
	}
	// Say which rule fields this proxy understands, so that a test does not rely on a field an
	// older proxy would ignore (and then hold more than the test meant).
	if err := writeFileAtomic(h.file+".features", []byte(hangFeatures)); err != nil {
		slog.Error("writing the hang features file", "err", err)
	}
	t := time.NewTicker(hangPollInterval)
	defer t.Stop()
	for {
		h.reload()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reload takes in the file when its content changed. A file that does not
// parse holds nothing and says why in the log.
func (h *hangControl) reload() {
	raw, err := os.ReadFile(h.file)
	if errors.Is(err, fs.ErrNotExist) {
		raw, err = nil, nil
	}
	if err != nil {
		slog.Error("reading the hang file", "file", h.file, "err", err)
		return
	}
	h.mu.Lock()
	same := bytes.Equal(raw, h.raw) && (raw == nil) == (h.raw == nil)
	h.mu.Unlock()
	if same {
		return
	}
	var rules *hangFile
	if raw != nil {
		rules = &hangFile{}
		if err := json.Unmarshal(raw, rules); err != nil {
			slog.Error("the hang file is not JSON of {methods, clients, podNamespaces} or {anyOf: [...]}; holding nothing", "file", h.file, "err", err)
			rules = nil
		}
	}
	h.mu.Lock()
	h.rules, h.raw = rules, raw
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	if rules != nil {
		slog.Info("holding calls", "rules", string(raw))
	} else {
		slog.Info("holding no calls")
	}
	applied := h.file + ".applied"
	if raw == nil {
		err = os.Remove(applied)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = writeFileAtomic(applied, raw)
	}
	if err != nil {
		slog.Error("writing the applied hang rules", "file", applied, "err", err)
	}
}

// writeFileAtomic replaces path with data in one rename.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// hold blocks a call while the rules hold it, and returns the error to
// answer with when the caller gives up first; nil lets the call go on.
func (h *hangControl) hold(ctx context.Context, method, podNamespace string) error {
	c := clientOf(ctx)
	logged := false
	for {
		rules, changed := h.current()
		if !rules.holds(method, c, podNamespace) {
			if logged {
				slog.Info("released call", "method", method, "client", c)
			}
			return nil
		}
		if !logged {
			slog.Info("holding call", "method", method, "client", c)
			logged = true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			slog.Info("held call given up by its client", "method", method, "client", c)
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// client is the process at the other end of a connection.
type client struct {
	pid  int32
	comm string
}

func (c client) String() string { return fmt.Sprintf("%s[%d]", c.comm, c.pid) }

// clientAddr is the remote address of an accepted connection: the peer's
// credentials, which gRPC hands to the call as its peer address.
type clientAddr struct {
	net.Addr
	client client
}

func clientOf(ctx context.Context) client {
	if p, ok := peer.FromContext(ctx); ok {
		if a, ok := p.Addr.(clientAddr); ok {
			return a.client
		}
	}
	return client{comm: "unknown"}
}

// peerListener records who connected: the PID of a unix socket's peer
// (SO_PEERCRED, in the proxy's PID namespace) and that process's name.
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return peerConn{Conn: conn, addr: clientAddr{Addr: conn.RemoteAddr(), client: peerOf(conn)}}, nil
}

type peerConn struct {
	net.Conn
	addr clientAddr
}

func (c peerConn) RemoteAddr() net.Addr { return c.addr }

// peerOf reads the peer's credentials; a failure names an unknown client.
func peerOf(conn net.Conn) client {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return client{comm: "unknown"}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return client{comm: "unknown"}
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return client{comm: "unknown"}
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(int(cred.Pid)) + "/comm")
	if err != nil {
		return client{pid: cred.Pid, comm: "unknown"}
	}
	return client{pid: cred.Pid, comm: strings.TrimSpace(string(comm))}
}

// podNamespaceOf is the namespace of the pod a call's first request is about, for the calls whose
// request carries the pod sandbox's metadata; "" otherwise or when it does not decode.
func podNamespaceOf(method string, first *frame) string {
	if first == nil {
		return ""
	}
	switch path.Base(method) {
	case "CreateContainer":
		var req runtimeapi.CreateContainerRequest
		if proto.Unmarshal(first.data, &req) == nil {
			return req.GetSandboxConfig().GetMetadata().GetNamespace()
		}
	case "RunPodSandbox":
		var req runtimeapi.RunPodSandboxRequest
		if proto.Unmarshal(first.data, &req) == nil {
			return req.GetConfig().GetMetadata().GetNamespace()
		}
	}
	return ""
}
