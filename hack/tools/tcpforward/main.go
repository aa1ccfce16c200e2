// Command tcpforward makes the local cluster's API server, which listens on
// the host's loopback only, reachable from pods on the cluster's bridge:
//
//	tcpforward --listen 10.244.0.1:6443 --upstream 127.0.0.1:6443
//
// It accepts TCP connections on --listen and copies bytes both ways to a new
// connection to --upstream, TLS untouched (the client checks the API server's
// own certificate, which names the bridge address). When one side closes its
// half, the other side's write half is closed; when both are done, both
// connections are. kube-apiserver takes one --bind-address, so a second
// listener has to be a separate process; this is it.
//
// --listen must be a loopback address or an address of the local bridge the
// cluster owns (--allow-cidr, 10.244.0.0/24 by default): it refuses to listen
// on anything another machine could reach. It stops on SIGTERM or SIGINT,
// closing the listener and every open connection.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to listen on (loopback or inside --allow-cidr)")
	upstream := flag.String("upstream", "127.0.0.1:6443", "address to forward every connection to")
	allow := flag.String("allow-cidr", "10.244.0.0/24", "the cluster's own bridge network; --listen must be in it or on loopback")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger, *listen, *upstream, *allow); err != nil {
		logger.Error("tcpforward failed", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, listen, upstream, allow string) error {
	if err := checkListen(listen, allow); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	logger.Info("forwarding", "listen", ln.Addr().String(), "upstream", upstream)
	return (&forwarder{upstream: upstream, logger: logger}).serve(ctx, ln)
}

// checkListen refuses any address that is not loopback or inside the allowed bridge network.
func checkListen(listen, allow string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", listen, err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("--listen %q: the host must be an IP address: %w", listen, err)
	}
	prefix, err := netip.ParsePrefix(allow)
	if err != nil {
		return fmt.Errorf("--allow-cidr %q: %w", allow, err)
	}
	if !addr.IsLoopback() && !prefix.Contains(addr) {
		return fmt.Errorf("--listen %q: refusing an address that is neither loopback nor in %s", listen, prefix)
	}
	return nil
}

type forwarder struct {
	upstream string
	logger   *slog.Logger
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

// serve accepts until ctx ends, then closes the listener and every open connection.
func (f *forwarder) serve(ctx context.Context, ln net.Listener) error {
	f.conns = map[net.Conn]struct{}{}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		f.mu.Lock()
		for c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			f.wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting: %w", err)
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.handle(ctx, c)
		}()
	}
}

func (f *forwarder) track(c net.Conn, add bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

func (f *forwarder) handle(ctx context.Context, client net.Conn) {
	f.track(client, true)
	defer f.track(client, false)
	defer client.Close()
	d := net.Dialer{Timeout: 10 * time.Second}
	up, err := d.DialContext(ctx, "tcp", f.upstream)
	if err != nil {
		f.logger.Info("upstream unreachable", "client", client.RemoteAddr().String(), "err", err)
		return
	}
	f.track(up, true)
	defer f.track(up, false)
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { pipe(up, client); done <- struct{}{} }()
	go func() { pipe(client, up); done <- struct{}{} }()
	<-done
	<-done
}

// pipe copies src to dst, then closes dst's write half (or all of dst if it has none), so that
// the peer sees the end of the stream.
func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	_ = dst.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = src.Close()
	}
}
