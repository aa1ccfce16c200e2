package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ControllerSocket is the path, from this host, of the health and metrics socket of pod's
// kruise-controller process (the local install's --addr=unix://...): inside the pod's own
// emptyDir, reached through /proc/<pid>/root; the e2e tests run as root on the only node.
func ControllerSocket(pod string) (string, error) {
	pid, err := podProcess(controllerComm, pod)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/proc/%d/root%s", pid, controllerSocket), nil
}

// DaemonMetrics reads /metrics of this node's kruise-daemon (at DaemonHealthAddr).
func DaemonMetrics(ctx context.Context) (string, error) {
	body, err := getMetrics(ctx, http.DefaultClient, "http://"+DaemonHealthAddr+"/metrics")
	if err != nil {
		return "", fmt.Errorf("kruise-daemon: %w", err)
	}
	return body, nil
}

func getMetrics(ctx context.Context, client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET /metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", fmt.Errorf("reading /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

// SampleNames are the names of the samples of a Prometheus text exposition: a histogram's
// name_bucket, name_sum and name_count, not its family name; HELP and TYPE lines are skipped.
func SampleNames(exposition string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if end := strings.IndexAny(line, "{ "); end > 0 {
			out[line[:end]] = true
		}
	}
	return out
}

// HasSeries says whether the exposition has a sample of name whose labels include every one of
// want (it may have more).
func HasSeries(exposition, name string, want map[string]string) bool {
	for _, line := range strings.Split(exposition, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+"{")
		if !ok {
			continue
		}
		labels, ok := parseLabels(rest)
		if !ok {
			continue
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// parseLabels reads `a="x",b="y\"z"} value` up to the closing brace.
func parseLabels(s string) (map[string]string, bool) {
	out := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return out, true
		}
		eq := strings.Index(s, "=\"")
		if eq <= 0 {
			return nil, false
		}
		name := s[:eq]
		s = s[eq+1:]
		end := 1
		for end < len(s) && s[end] != '"' {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(s) {
			return nil, false
		}
		v, err := strconv.Unquote(s[:end+1])
		if err != nil {
			return nil, false
		}
		out[name] = v
		s = s[end+1:]
	}
}
