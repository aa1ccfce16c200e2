package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli/flag"

	"github.com/nodekruise/kruise/pkg/process/healthz"
)

// DefaultProbeTimeout bounds the probe's one request.
const DefaultProbeTimeout = 3 * time.Second

// probeBodyLimit caps how much of a failing answer the probe prints.
const probeBodyLimit = 16 << 10

// newProbeCommand returns "<name> probe [--addr=ADDR] [--timeout=D] [PATH]":
// one GET of PATH (default /healthz) on the component's health server, exit
// status 0 on a 2xx answer, 1 otherwise with the status and body on stderr.
// It is the exec liveness/readiness probe of a pod that serves health on a
// unix socket (hostNetwork replicas sharing a node cannot share a TCP
// port); the images hold nothing but the binary, so the binary probes.
func newProbeCommand(name, defaultAddr string) *cobra.Command {
	addr := defaultAddr
	timeout := DefaultProbeTimeout
	cmd := &cobra.Command{
		Use:   "probe [PATH]",
		Short: "GET " + name + "'s /healthz or /readyz once; exit 0 on a 2xx answer (an exec probe)",
		Long: `probe does one HTTP GET of PATH (default /healthz; /readyz, and ?verbose, work
too) against the health server of a running ` + name + ` and exits 0 if the answer
is 2xx. Otherwise it prints the status and the body, or why it could not connect,
to stderr and exits 1. It neither starts ` + name + ` nor reads its other flags.

--addr takes what ` + name + `'s --addr takes: host:port (":port" and an
unspecified host mean the loopback address) or unix:///abs/path.

Use it as an exec probe when the health server listens on a unix socket, e.g.
  ` + name + ` probe --addr=unix:///run/kruise/health.sock /readyz`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/healthz"
			if len(args) == 1 {
				path = args[0]
			}
			if !strings.HasPrefix(path, "/") {
				return fmt.Errorf("PATH must start with /, got %q", path)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout must be positive, got %s", timeout)
			}
			if addr == "" {
				return errors.New("--addr must not be empty")
			}
			return probe(cmd.Context(), addr, path, timeout, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.SetNormalizeFunc(flag.WordSepNormalizeFunc)
	fs.StringVar(&addr, "addr", addr, "Address of the health server: host:port, :port (loopback) or unix:///abs/path.")
	fs.DurationVar(&timeout, "timeout", timeout, "How long the request may take, connecting included.")
	return cmd
}

// probe GETs path on addr once. A failure is written to stderr and returned
// as an exitError; a bad address is returned as a usage error.
func probe(ctx context.Context, addr, path string, timeout time.Duration, stderr io.Writer) error {
	network, address, err := healthz.DialTarget(addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	host, target := address, "http://"+address+path
	if network == "unix" {
		host, target = "localhost", path+" on unix://"+address
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			// Never a proxy from the environment: the server is on this host.
			Proxy:             nil,
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, address)
			},
		},
		// One request: a redirect is an answer, and not a 2xx one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+path, nil)
	if err != nil {
		return fmt.Errorf("PATH %q: %w", path, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the repeated "Get <url>:"
		}
		fmt.Fprintf(stderr, "GET %s failed: %v\n", target, err)
		return &exitError{code: 1}
	}
	defer func() { _ = resp.Body.Close() }()
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, probeBodyLimit))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	fmt.Fprintf(stderr, "GET %s: %s\n", target, resp.Status)
	if len(body) > 0 {
		fmt.Fprintf(stderr, "%s", body)
		if body[len(body)-1] != '\n' {
			fmt.Fprintln(stderr)
		}
	}
	if readErr != nil {
		fmt.Fprintf(stderr, "(reading the body: %v)\n", readErr)
	}
	return &exitError{code: 1}
}
