// Command registry serves the test OCI registry of test/registry on a
// loopback address: public/... is anonymous, basic/... needs HTTP Basic
// credentials and token/... needs a Bearer token from /token; slow/, stall/,
// flaky/<n>/, drop/ and broken/ inject delays and faults into blob GETs (the
// package comment of test/registry says how).
//
//	go run ./hack/tools/registry --addr 127.0.0.1:5000 --data-dir /var/tmp/kruise-registry
//
// Manifests are kept in memory and blobs in --data-dir: push the test images
// again after every start. It stops cleanly on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/nodekruise/kruise/test/registry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		addr      = flag.String("addr", "127.0.0.1:5000", "listen address; must be a loopback address (127.0.0.0/8, ::1 or localhost)")
		dataDir   = flag.String("data-dir", "", "directory for blobs (created if missing); empty: a temporary directory removed at exit")
		name      = flag.String("name", registry.DefaultName, "service name in Bearer challenges")
		basicUser = flag.String("basic-user", "kruise", "user for repositories under basic/")
		basicPW   = flag.String("basic-password", "kruise-basic-pw", "password for repositories under basic/")
		tokenUser = flag.String("token-user", "kruise", "user the /token endpoint accepts for repositories under token/")
		tokenPW   = flag.String("token-password", "kruise-token-pw", "password the /token endpoint accepts for repositories under token/")
		pidFile   = flag.String("pid-file", "", "write the process id to this file (removed at exit)")
		logJSON   = flag.Bool("log-json", false, "log in JSON instead of text")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags]\n\nServes a test OCI registry on a loopback address.\n\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %q", flag.Args())
	}

	var handler slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if *logJSON {
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	logger := slog.New(handler)

	if err := checkLoopback(*addr); err != nil {
		return err
	}
	if *dataDir == "" {
		dir, err := os.MkdirTemp("", "kruise-registry-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dataDir = dir
	}
	h, err := registry.New(registry.Options{
		Name:          *name,
		BasicUser:     *basicUser,
		BasicPassword: *basicPW,
		TokenUser:     *tokenUser,
		TokenPassword: *tokenPW,
		BlobDir:       *dataDir,
		Logger:        logger,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer l.Close()
	// "localhost" could resolve to anything: check what was actually bound.
	if tcp, ok := l.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		return fmt.Errorf("refusing to serve on non-loopback address %s", l.Addr())
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
		defer os.Remove(*pidFile)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger.Info("registry listening", "addr", l.Addr().String(), "dataDir", *dataDir, "pid", os.Getpid())
	if err := registry.Serve(ctx, l, h); err != nil {
		return err
	}
	logger.Info("registry stopped")
	return nil
}

// checkLoopback refuses listen addresses that are not loopback, before anything is bound.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("--addr " + addr + ": refusing to listen on a non-loopback address; use 127.0.0.1:<port>, [::1]:<port> or localhost:<port>")
	}
	return nil
}
