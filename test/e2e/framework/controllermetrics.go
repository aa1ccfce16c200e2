package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
