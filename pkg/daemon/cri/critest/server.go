// Package critest provides a fake CRI runtime served over a real unix socket,
// for tests of code that speaks the CRI wire protocol.
package critest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FakeRuntime implements Version and, with an in-memory container table
// (containers.go), ListContainers, ContainerStatus, StopContainer and
// ExecSync of the CRI RuntimeService; every other call answers
// Unimplemented. It also carries an image store (Images) that Serve
// registers as the ImageService of the same server.
type FakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	table  containerTable
	images FakeImages

	mu       sync.Mutex
	resp     *runtimeapi.VersionResponse
	err      error
	calls    int
	blockCh  chan struct{}
	blocking bool
}

// NewFakeRuntime answers Version as containerd 1.7.0 on CRI v1.
func NewFakeRuntime() *FakeRuntime {
	return &FakeRuntime{resp: &runtimeapi.VersionResponse{
		Version: "0.1.0", RuntimeName: "containerd", RuntimeVersion: "1.7.0", RuntimeApiVersion: "v1",
	}}
}

// Images returns the runtime's image service, served next to it by Serve.
func (f *FakeRuntime) Images() *FakeImages { return &f.images }

// SetVersion changes what Version answers.
func (f *FakeRuntime) SetVersion(name, version, apiVersion string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resp = &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: name, RuntimeVersion: version, RuntimeApiVersion: apiVersion}
}

// SetError makes Version fail with err (nil restores normal answers).
func (f *FakeRuntime) SetError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Hang makes Version block until the caller's deadline (true) or answer
// again (false): a runtime that accepts calls but never answers.
func (f *FakeRuntime) Hang(hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if hang && !f.blocking {
		f.blockCh = make(chan struct{})
	}
	if !hang && f.blocking {
		close(f.blockCh)
	}
	f.blocking = hang
}

// Calls reports how many Version calls arrived.
func (f *FakeRuntime) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Version implements runtimeapi.RuntimeServiceServer.
func (f *FakeRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	f.calls++
	resp, err, block := f.resp, f.err, f.blockCh
	blocking := f.blocking
	f.mu.Unlock()
	if blocking {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Server is a gRPC server on a unix socket.
type Server struct {
	Path string
	grpc *grpc.Server
	done chan struct{}
	once sync.Once
}

// imageServer is a runtime that brings its own image service, as
// *FakeRuntime does.
type imageServer interface {
	Images() *FakeImages
}

// Serve registers rt (which may be nil for a gRPC server without the CRI
// services) and serves it on a unix socket at path. When rt has an image
// service (a *FakeRuntime has), it is registered on the same server. The
// server stops when the test ends.
func Serve(t testing.TB, path string, rt runtimeapi.RuntimeServiceServer) *Server {
	t.Helper()
	var images runtimeapi.ImageServiceServer
	if is, ok := rt.(imageServer); ok {
		images = is.Images()
	}
	return ServeCRI(t, path, rt, images)
}

// ServeCRI is Serve with the image service given apart; either may be nil.
func ServeCRI(t testing.TB, path string, rt runtimeapi.RuntimeServiceServer, images runtimeapi.ImageServiceServer) *Server {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("creating socket dir: %v", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
	}
	s := &Server{Path: path, grpc: grpc.NewServer(), done: make(chan struct{})}
	if rt != nil {
		runtimeapi.RegisterRuntimeServiceServer(s.grpc, rt)
	}
	if images != nil {
		runtimeapi.RegisterImageServiceServer(s.grpc, images)
	}
	go func() {
		defer close(s.done)
		_ = s.grpc.Serve(ln)
	}()
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server and removes its socket.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.grpc.Stop()
		<-s.done
		_ = os.Remove(s.Path)
	})
}

// ShortTempDir returns a fresh temp dir short enough for unix socket paths
// (t.TempDir paths can exceed the 108-byte limit). It is removed at cleanup.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatalf("creating temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
