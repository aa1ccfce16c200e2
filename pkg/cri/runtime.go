package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MaxMsgSize bounds gRPC messages both ways. It matches the kubelet's limit:
// large enough for ListContainers on a busy node.
const MaxMsgSize = 16 * 1024 * 1024

// VersionInfo is what a runtime says about itself.
type VersionInfo struct {
	// RuntimeName is e.g. "containerd" or "cri-o".
	RuntimeName string
	// RuntimeVersion is the runtime's own version, e.g. "1.6.20".
	RuntimeVersion string
	// RuntimeAPIVersion is the CRI API version the runtime serves, e.g. "v1".
	RuntimeAPIVersion string
}

// Runtime is a connected container runtime. It grows with the features that
// need it; its types carry no Kubernetes API objects.
type Runtime interface {
	// ImageService pulls, inspects and removes images on the same
	// connection.
	ImageService

	// Version asks the runtime for its name and versions.
	Version(ctx context.Context) (VersionInfo, error)
	// PodContainers lists every container instance (running or not) the
	// kubelet created for the pod with this UID.
	PodContainers(ctx context.Context, podUID string) ([]Container, error)
	// StopContainer stops a container, sending SIGKILL after timeout (whole
	// seconds, rounded up). A container that is already gone is not an error.
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	// ExecSync runs cmd in the container and waits at most timeout (rounded
	// up to whole seconds; zero means no runtime-side limit). A non-zero exit
	// code is reported in the result, not as an error.
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error)
	// Endpoint is the unix socket path the runtime was reached on.
	Endpoint() string
	// Close releases the connection.
	Close() error
}

// ErrNotCRI marks a socket that accepted a connection but does not serve
// the CRI v1 RuntimeService.
var ErrNotCRI = errors.New("does not serve CRI v1 runtime.v1.RuntimeService")

// remoteRuntime is a Runtime reached over gRPC on a unix socket.
type remoteRuntime struct {
	path   string
	conn   *grpc.ClientConn
	client runtimeapi.RuntimeServiceClient
	images runtimeapi.ImageServiceClient
}

var _ Runtime = (*remoteRuntime)(nil)

// Dial opens a gRPC connection to the CRI socket at path (a plain path or a
// unix:// URL). The connection is lazy: nothing is sent until the first call,
// so use Connect to also check the runtime answers.
func Dial(endpoint string) (Runtime, error) {
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	return dialPath(path, nil)
}

// dialPath connects lazily; m, when not nil, times and counts every call.
func dialPath(path string, m *Metrics) (*remoteRuntime, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMsgSize), grpc.MaxCallSendMsgSize(MaxMsgSize)),
		// The runtime is local and restarts in well under a second; the gRPC
		// default backoff (up to 120 s) would hide its return for minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
	if m != nil {
		opts = append(opts, grpc.WithChainUnaryInterceptor(m.unaryInterceptor))
	}
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating gRPC client for %s: %w", path, err)
	}
	return &remoteRuntime{
		path:   path,
		conn:   conn,
		client: runtimeapi.NewRuntimeServiceClient(conn),
		images: runtimeapi.NewImageServiceClient(conn),
	}, nil
}

// Connect dials endpoint and checks within timeout that it answers CRI
// Version. On success it returns the runtime and what it reported.
func Connect(ctx context.Context, endpoint string, timeout time.Duration) (Runtime, VersionInfo, error) {
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, VersionInfo{}, err
	}
	return connectPath(ctx, path, timeout, nil)
}

func connectPath(ctx context.Context, path string, timeout time.Duration, m *Metrics) (Runtime, VersionInfo, error) {
	rt, err := dialPath(path, m)
	if err != nil {
		return nil, VersionInfo{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := rt.Version(callCtx)
	if err != nil {
		_ = rt.Close()
		if status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil {
			return nil, VersionInfo{}, fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return nil, VersionInfo{}, err
	}
	return rt, info, nil
}

func (r *remoteRuntime) Endpoint() string { return r.path }

func (r *remoteRuntime) Close() error { return r.conn.Close() }

func (r *remoteRuntime) Version(ctx context.Context) (VersionInfo, error) {
	resp, err := r.client.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return VersionInfo{}, fmt.Errorf("CRI Version: %w: %w", ErrNotCRI, err)
		}
		return VersionInfo{}, fmt.Errorf("CRI Version: %w", err)
	}
	return VersionInfo{
		RuntimeName:       resp.GetRuntimeName(),
		RuntimeVersion:    resp.GetRuntimeVersion(),
		RuntimeAPIVersion: resp.GetRuntimeApiVersion(),
	}, nil
}
