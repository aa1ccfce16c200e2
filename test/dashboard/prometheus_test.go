//go:build dashboard

package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prometheus is a Prometheus server this test started, on loopback, with its own data directory.
type prometheus struct {
	addr string // host:port of its HTTP API
}

// scrapeTarget is one static scrape job: its targets get the labels the chart's PodMonitors set
// (component, node).
type scrapeTarget struct {
	job, component, node string
	addrs                []string
	honorLabels          bool
}

// startPrometheus writes a configuration scraping targets every second and runs bin with it
// until the test ends (stopped by its PID: SIGTERM, then SIGKILL if it does not exit).
func startPrometheus(t *testing.T, bin string, targets []scrapeTarget) *prometheus {
	t.Helper()
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    honor_labels: %v\n    static_configs:\n      - targets: [%s]\n        labels: {component: %s, node: %s}\n",
			tg.job, tg.honorLabels, strings.Join(tg.addrs, ", "), tg.component, tg.node)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}
	// Debian's build serves its web pages from files (usr/share/prometheus/web) and takes their
	// directory as a flag, which upstream's build does not know: pass it when the package is
	// unpacked next to the binary.
	if assets := filepath.Join(filepath.Dir(bin), "..", "share", "prometheus", "web"); isDir(assets) {
		args = append(args, "--web.local-assets="+assets)
	}
	cmd := exec.Command(bin, args...)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", out)
		}
		_ = log.Close()
	})
	t.Logf("prometheus %s (pid %d) on http://%s, configuration:\n%s", bin, cmd.Process.Pid, addr, cfg.String())
	return &prometheus{addr: addr}
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// freeLoopbackAddr returns a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// unixSocketProxy serves HTTP on a loopback port and forwards every request to the server on
// the unix socket sock (Prometheus scrapes TCP only; the local controller serves its metrics on
// a socket). It stops when the test ends.
func unixSocketProxy(t *testing.T, sock string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "controller"})
	proxy.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// apiResult is the data of a /api/v1/query or /api/v1/query_range answer.
type apiResult struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`  // instant: [time, "value"]
		Values [][]any           `json:"values"` // range: [[time, "value"], ...]
	} `json:"result"`
}

// samples returns every value of the answer, as Prometheus wrote them ("NaN" included).
func (r apiResult) samples() []string {
	var out []string
	for _, s := range r.Result {
		if len(s.Value) == 2 {
			out = append(out, fmt.Sprint(s.Value[1]))
		}
		for _, v := range s.Values {
			if len(v) == 2 {
				out = append(out, fmt.Sprint(v[1]))
			}
		}
	}
	return out
}

// get calls the HTTP API and decodes its data into out; an error answer is an error.
func (p *prometheus) get(ctx context.Context, path string, params url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: %s: undecodable answer %q: %w", path, resp.Status, body, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, env.ErrorType, env.Error)
	}
	if len(env.Warnings) > 0 {
		return fmt.Errorf("%s: warnings %v", path, env.Warnings)
	}
	return json.Unmarshal(env.Data, out)
}

// query runs expr at now (instant) or over the last window at step.
func (p *prometheus) query(ctx context.Context, expr string, instant bool, window, step time.Duration) (apiResult, error) {
	var r apiResult
	now := time.Now()
	if instant {
		err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(now)}}, &r)
		return r, err
	}
	err := p.get(ctx, "/api/v1/query_range", url.Values{
		"query": {expr}, "start": {unix(now.Add(-window))}, "end": {unix(now)}, "step": {step.String()},
	}, &r)
	return r, err
}

// labelValues answers Grafana's label_values(selector, label) the way Grafana asks it.
func (p *prometheus) labelValues(ctx context.Context, selector, label string) ([]string, error) {
	var vals []string
	err := p.get(ctx, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{"match[]": {selector}}, &vals)
	return vals, err
}

func unix(t time.Time) string { return fmt.Sprintf("%.3f", float64(t.UnixNano())/1e9) }
