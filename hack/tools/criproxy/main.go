// Command criproxy sits between a CRI client (the kruise daemon under e2e
// test) and the node's container runtime, forwards every gRPC call to the
// runtime unchanged, and records each PullImage request:
//
//	criproxy --listen /run/kruise-criproxy.sock \
//	    --upstream /run/containerd/containerd.sock \
//	    --record /var/tmp/kruise-pulls.jsonl
//
// Calls of any service (runtime.v1.RuntimeService, runtime.v1.ImageService,
// ...) are forwarded as raw bytes, streaming calls included, with their
// metadata, deadline and cancellation; headers, trailers and status come
// back the same way. Only PullImage requests (and responses) are decoded,
// to append one JSON line per pull to --record:
//
//	{"time":"...","image":"...","sandboxLabels":{},"sandboxAnnotations":{},
//	 "hasSandboxConfig":true,"hasAuth":false,"error":"","code":"OK","imageRef":"sha256:..."}
//
// time is when the request arrived; error is the runtime's status message
// ("" on success). Credentials are never recorded, only whether there were
// any. The socket is created with mode 0660; a stale socket left at --listen
// is removed first. It stops cleanly on SIGTERM or SIGINT.
//
// With --hang-file FILE it plays a runtime that takes calls and never
// answers them, for chosen methods and chosen clients. While FILE holds
//
//	{"methods":["ListContainers","Version"],"clients":["kruise-daemon"]}
//
// every matching call is held: not forwarded, not answered, until its
// caller gives up (it then gets its own DeadlineExceeded or Canceled) or
// the file changes so that it no longer matches (then it is forwarded as
// usual). An empty or absent list matches every method or client. Clients
// are told apart by the name of the process at the other end of the
// connection (SO_PEERCRED, then /proc/PID/comm), so the kruise daemon can be
// held while crictl, the tests and anything else go on. "podNamespaces"
// narrows a rule to RunPodSandbox and CreateContainer calls for pods of
// those namespaces (read from the request), so a test can hold the
// kubelet's work on its own pods alone. {"anyOf":[RULE, ...]} holds a call
// that any one of the rules holds (tests in parallel each add their own). The file is read
// every 100 ms; once a change is in force its content is copied to
// FILE.applied (removed with FILE), for tests to wait on. Removing FILE
// releases every held call. FILE.features lists the rule fields this proxy
// understands.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/process/healthz"
)

// pullImageMethod is the only call whose body is decoded.
const pullImageMethod = "/runtime.v1.ImageService/PullImage"

// stopGrace is how long Stop lets calls in flight finish; long-lived
// streams (GetContainerEvents) are then cut.
const stopGrace = 5 * time.Second

func main() {
	if err := run(context.Background(), os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "criproxy:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	listen   string
	upstream string
	record   string
	hangFile string
}

func parseFlags(args []string) (config, error) {
	var c config
	fl := flag.NewFlagSet("criproxy", flag.ContinueOnError)
	fl.StringVar(&c.listen, "listen", "", "unix socket path to serve on (required)")
	fl.StringVar(&c.upstream, "upstream", "", "unix socket path of the container runtime, e.g. /run/containerd/containerd.sock (required)")
	fl.StringVar(&c.record, "record", "", "file to append one JSON line per PullImage request to; empty: no record")
	fl.StringVar(&c.hangFile, "hang-file", "", `file whose JSON {"methods":[...],"clients":[...],"podNamespaces":[...]} names the calls to hold without answering; empty: none`)
	if err := fl.Parse(args); err != nil {
		return config{}, err
	}
	if fl.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fl.Args())
	}
	if c.listen == "" || c.upstream == "" {
		return config{}, errors.New("--listen and --upstream are required")
	}
	return c, nil
}

// run serves until ctx ends or SIGTERM/SIGINT arrives. ready, when not nil,
// is called once the socket accepts connections and signals are caught.
func run(ctx context.Context, args []string, ready func(*proxy)) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p, err := newProxy(cfg)
	if err != nil {
		return err
	}
	slog.Info("criproxy serving", "listen", cfg.listen, "upstream", cfg.upstream, "record", cfg.record, "hangFile", cfg.hangFile)
	served := make(chan error, 1)
	go func() { served <- p.serve() }()
	if ready != nil {
		ready(p)
	}
	select {
	case <-ctx.Done():
		slog.Info("criproxy stopping")
		p.stop()
		<-served
		return nil
	case err := <-served:
		p.stop()
		return fmt.Errorf("serving %s: %w", cfg.listen, err)
	}
}

// frame is one gRPC message, kept as its wire bytes.
type frame struct{ data []byte }

// rawCodec passes message bytes through untouched. It calls itself "proto"
// so that the content type stays application/grpc+proto both ways.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("raw codec cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("raw codec cannot unmarshal into %T", v)
	}
	// Materialize copies: data is reused once we return.
	f.data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// proxy is one running criproxy.
type proxy struct {
	path string
	ln   net.Listener
	srv  *grpc.Server
	up   *grpc.ClientConn
	rec  *recorder
	// hang holds the calls the hang file names; nil without one.
	hang     *hangControl
	stopHang context.CancelFunc
	hangDone chan struct{}

	stopOnce sync.Once
}

// newProxy listens on cfg.listen (removing a stale socket first) and
// prepares the upstream connection, which is made lazily.
func newProxy(cfg config) (*proxy, error) {
	if err := healthz.RemoveStaleSocket(cfg.listen); err != nil {
		return nil, err
	}
	var rec *recorder
	if cfg.record != "" {
		f, err := os.OpenFile(cfg.record, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening record file: %w", err)
		}
		rec = &recorder{w: f, c: f}
	}
	up, err := grpc.NewClient("unix://"+cfg.upstream,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.ForceCodecV2(rawCodec{}),
			grpc.MaxCallRecvMsgSize(cri.MaxMsgSize),
			grpc.MaxCallSendMsgSize(cri.MaxMsgSize),
		),
	)
	if err != nil {
		rec.close()
		return nil, fmt.Errorf("creating upstream client for %s: %w", cfg.upstream, err)
	}
	ln, err := net.Listen("unix", cfg.listen)
	if err != nil {
		rec.close()
		_ = up.Close()
		return nil, err
	}
	if err := os.Chmod(cfg.listen, 0o660); err != nil {
		_ = ln.Close()
		rec.close()
		_ = up.Close()
		return nil, err
	}
	p := &proxy{path: cfg.listen, ln: peerListener{ln}, up: up, rec: rec, stopHang: func() {}}
	if cfg.hangFile != "" {
		p.hang = newHangControl(cfg.hangFile)
		var ctx context.Context
		ctx, p.stopHang = context.WithCancel(context.Background())
		p.hangDone = make(chan struct{})
		go func() {
			defer close(p.hangDone)
			p.hang.run(ctx)
		}()
	}
	p.srv = grpc.NewServer(
		grpc.UnknownServiceHandler(p.forward),
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(cri.MaxMsgSize),
		grpc.MaxSendMsgSize(cri.MaxMsgSize),
	)
	return p, nil
}

func (p *proxy) serve() error {
	err := p.srv.Serve(p.ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// stop lets calls in flight finish for up to stopGrace, then cuts the
// rest, closes the upstream connection and the record, and removes the
// socket.
func (p *proxy) stop() {
	p.stopOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			p.srv.GracefulStop()
			close(done)
		}()
		timer := time.NewTimer(stopGrace)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			p.srv.Stop()
			<-done
		}
		p.stopHang()
		if p.hangDone != nil {
			<-p.hangDone
		}
		_ = p.up.Close()
		p.rec.close()
		_ = os.Remove(p.path)
	})
}

// forward is the handler of every call: it opens the same call upstream
// and copies messages both ways until the upstream call ends.
func (p *proxy) forward(_ any, down grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(down)
	if !ok {
		return status.Error(codes.Internal, "criproxy: no method in stream")
	}
	arrived := time.Now()
	// Every CRI call starts with one request message; it is read before the call is held or
	// forwarded, since a hang rule may name the pod namespace it is about.
	first := &frame{}
	if err := down.RecvMsg(first); err != nil {
		if !errors.Is(err, io.EOF) {
			return err
		}
		first = nil
	}
	if err := p.hang.hold(down.Context(), method, podNamespaceOf(method, first)); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(down.Context())
	defer cancel()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, forwardedMetadata(md))
	}
	up, err := p.up.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	recording := method == pullImageMethod && p.rec != nil
	// The first request body of a recorded call; it is put here before it
	// is sent, so it is there once the upstream has answered.
	firstReq := make(chan []byte, 1)
	go func() {
		if first == nil {
			_ = up.CloseSend()
			return
		}
		if recording {
			firstReq <- first.data
		}
		if err := up.SendMsg(first); err != nil {
			return
		}
		for {
			f := &frame{}
			if err := down.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = up.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if err := up.SendMsg(f); err != nil {
				// The upstream call ended; RecvMsg below reports how.
				return
			}
		}
	}()

	var firstResp []byte
	headerSent := false
	for {
		f := &frame{}
		err := up.RecvMsg(f)
		if !headerSent {
			headerSent = true
			if md, herr := up.Header(); herr == nil && len(md) > 0 {
				if err := down.SendHeader(md); err != nil {
					return err
				}
			}
		}
		if err != nil {
			down.SetTrailer(up.Trailer())
			if errors.Is(err, io.EOF) {
				err = nil
			}
			if recording {
				p.recordPull(arrived, firstReq, firstResp, err)
			}
			return err
		}
		if recording && firstResp == nil {
			firstResp = f.data
		}
		if err := down.SendMsg(f); err != nil {
			return err
		}
	}
}

// forwardedMetadata is the caller's metadata less what the transport
// sets itself (pseudo-headers, content type, user agent, grpc-*), which the
// upstream call gets anew; the deadline travels with the context.
func forwardedMetadata(in metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, vs := range in {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			continue
		}
		switch k {
		case "content-type", "user-agent", "te", "host":
			continue
		}
		out[k] = slices.Clone(vs)
	}
	return out
}

// pullRecord is one line of the record file.
type pullRecord struct {
	Time               string            `json:"time"`
	Image              string            `json:"image"`
	SandboxLabels      map[string]string `json:"sandboxLabels"`
	SandboxAnnotations map[string]string `json:"sandboxAnnotations"`
	HasSandboxConfig   bool              `json:"hasSandboxConfig"`
	HasAuth            bool              `json:"hasAuth"`
	Error              string            `json:"error"`
	Code               string            `json:"code"`
	ImageRef           string            `json:"imageRef,omitempty"`
}

func (p *proxy) recordPull(arrived time.Time, firstReq <-chan []byte, resp []byte, callErr error) {
	r := pullRecord{
		Time:               arrived.UTC().Format(time.RFC3339Nano),
		SandboxLabels:      map[string]string{},
		SandboxAnnotations: map[string]string{},
		Code:               status.Code(callErr).String(),
	}
	if callErr != nil {
		r.Error = status.Convert(callErr).Message()
	}
	select {
	case body := <-firstReq:
		var req runtimeapi.PullImageRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			slog.Warn("cannot decode PullImage request", "err", err)
			break
		}
		r.Image = req.GetImage().GetImage()
		r.HasAuth = req.GetAuth() != nil
		if sc := req.GetSandboxConfig(); sc != nil {
			r.HasSandboxConfig = true
			for k, v := range sc.GetLabels() {
				r.SandboxLabels[k] = v
			}
			for k, v := range sc.GetAnnotations() {
				r.SandboxAnnotations[k] = v
			}
		}
	default:
		// The call failed before the request reached the runtime.
	}
	if resp != nil {
		var pr runtimeapi.PullImageResponse
		if err := proto.Unmarshal(resp, &pr); err == nil {
			r.ImageRef = pr.GetImageRef()
		}
	}
	slog.Info("PullImage", "image", r.Image, "hasAuth", r.HasAuth, "code", r.Code, "error", r.Error)
	if err := p.rec.write(r); err != nil {
		slog.Error("writing record", "err", err)
	}
}

// recorder appends JSON lines; a nil recorder records nothing.
type recorder struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
	// written, when set (tests), is called after each line is written.
	written func(pullRecord)
}

// onWritten sets the function called after each line is written.
func (r *recorder) onWritten(fn func(pullRecord)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written = fn
}

func (r *recorder) write(rec pullRecord) error {
	if r == nil {
		return nil
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	r.mu.Lock()
	_, err = r.w.Write(line)
	fn := r.written
	r.mu.Unlock()
	if fn != nil {
		fn(rec)
	}
	return err
}

func (r *recorder) close() {
	if r == nil || r.c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.c.Close()
}
