package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// ControllerMetrics returns the /metrics text of the kruise-controller process of pod, read on
// the unix socket in the pod's own emptyDir through /proc/<pid>/root, as ControllerReadyz does.
func ControllerMetrics(ctx context.Context, pod string) (string, error) {
	pid, err := podProcess(controllerComm, pod)
	if err != nil {
		return "", err
	}
	sock := fmt.Sprintf("/proc/%d/root%s", pid, controllerSocket)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://controller/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking kruise-controller %s for /metrics: %w", pod, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", fmt.Errorf("reading kruise-controller %s's /metrics answer: %w", pod, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("kruise-controller %s's /metrics answered %d", pod, resp.StatusCode)
	}
	return string(body), nil
}

// ControllerRSS is the resident memory, in bytes, of the kruise-controller process of pod, read
// from /proc/<pid>/status (VmRSS) on this node.
func ControllerRSS(pod string) (int64, error) {
	pid, err := podProcess(controllerComm, pod)
	if err != nil {
		return 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the status of kruise-controller %s: %w", pod, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("kruise-controller %s: VmRSS %q: %w", pod, rest, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("kruise-controller %s: no VmRSS in /proc/%d/status", pod, pid)
}
