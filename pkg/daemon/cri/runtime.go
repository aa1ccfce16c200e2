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

// DefaultCallTimeout bounds every CRI call that has no deadline of its own
// (Version, ListContainers, ContainerStatus, ImageStatus, RemoveImage, and
// ExecSync without a timeout): the kubelet's default runtime request
// timeout. A runtime that accepts a call and never answers would otherwise
// hold the caller (a CRR worker, say) for ever. StopContainer and ExecSync
// add CallMargin to their runtime-side timeout instead; PullImage runs
// under the caller's deadline (a tag's timeoutSeconds).
const DefaultCallTimeout = 2 * time.Minute

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
	// ContainerInfo reads a container instance's state and the runtime's
	// verbose information about it (ContainerStatus, verbose): what it was
	// created with, without running anything in it.
	ContainerInfo(ctx context.Context, id string) (ContainerInfo, error)
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
	// callTimeout bounds each call that has no deadline of its own.
	callTimeout time.Duration
}

// dialConfig is how a connection is made.
type dialConfig struct {
	// metrics, when not nil, times and counts every call.
	metrics *Metrics
	// callTimeout is remoteRuntime.callTimeout; zero is DefaultCallTimeout.
	callTimeout time.Duration
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
	return dialPath(path, dialConfig{})
}

// dialPath connects lazily.
func dialPath(path string, dc dialConfig) (*remoteRuntime, error) {
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
	if dc.metrics != nil {
		opts = append(opts, grpc.WithChainUnaryInterceptor(dc.metrics.unaryInterceptor))
	}
	if dc.callTimeout <= 0 {
		dc.callTimeout = DefaultCallTimeout
	}
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating gRPC client for %s: %w", path, err)
	}
	return &remoteRuntime{
		path:        path,
		conn:        conn,
		client:      runtimeapi.NewRuntimeServiceClient(conn),
		images:      runtimeapi.NewImageServiceClient(conn),
		callTimeout: dc.callTimeout,
	}, nil
}

// Connect dials endpoint and checks within timeout that it answers CRI
// Version. On success it returns the runtime and what it reported.
func Connect(ctx context.Context, endpoint string, timeout time.Duration) (Runtime, VersionInfo, error) {
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, VersionInfo{}, err
	}
	return connectPath(ctx, path, timeout, dialConfig{})
}

func connectPath(ctx context.Context, path string, timeout time.Duration, dc dialConfig) (Runtime, VersionInfo, error) {
	rt, err := dialPath(path, dc)
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

// bounded returns ctx bounded by the call timeout, for a call without a
// deadline of its own; a caller's earlier deadline stays.
func (r *remoteRuntime) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.callTimeout)
}

// noAnswer says so when err is the expiry of our deadline of the call
// (callCtx's, within after the call began), not the caller's (ctx's) nor a
// DeadlineExceeded the runtime answered itself before it: the runtime took
// the call and did not answer in time. The gRPC status stays in the chain.
// The clock decides, not callCtx.Err(): the server may see the deadline
// (sent along with the call) pass and end the call a moment before the
// client's context does.
func noAnswer(ctx, callCtx context.Context, err error, within time.Duration) error {
	if status.Code(err) != codes.DeadlineExceeded {
		return err
	}
	ours, ok := callCtx.Deadline()
	if !ok || time.Now().Before(ours) {
		return err // the runtime's own answer
	}
	if theirs, ok := ctx.Deadline(); ok && !theirs.After(ours) {
		return err // the caller's deadline
	}
	return fmt.Errorf("the runtime did not answer within %s: %w", within, err)
}

func (r *remoteRuntime) Version(ctx context.Context) (VersionInfo, error) {
	callCtx, cancel := r.bounded(ctx)
	defer cancel()
	resp, err := r.client.Version(callCtx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return VersionInfo{}, fmt.Errorf("CRI Version: %w: %w", ErrNotCRI, err)
		}
		return VersionInfo{}, fmt.Errorf("CRI Version: %w", noAnswer(ctx, callCtx, err, r.callTimeout))
	}
	return VersionInfo{
		RuntimeName:       resp.GetRuntimeName(),
		RuntimeVersion:    resp.GetRuntimeVersion(),
		RuntimeAPIVersion: resp.GetRuntimeApiVersion(),
	}, nil
}
