package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ControllerSelector selects kruise-controller's pods.
	ControllerSelector = "app.kubernetes.io/name=kruise-controller"
	// controllerComm is the controller's process name as /proc/<pid>/comm shows it (15 characters).
	controllerComm = "kruise-controll"
	// controllerSocket is the health socket inside a controller pod (the local install's --addr).
	controllerSocket = "/run/kruise/controller.sock"
)

// ControllerPods lists kruise-controller's pods.
func (f *Framework) ControllerPods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := f.Client.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: ControllerSelector})
	if err != nil {
		return nil, fmt.Errorf("listing kruise-controller pods: %w", err)
	}
	return list.Items, nil
}

// ControllerReadyz asks the kruise-controller process of pod for /readyz?verbose, on the unix
// socket in the pod's own emptyDir, reached through /proc/<pid>/root: the e2e tests run as root on
// the local cluster's only node.
func ControllerReadyz(ctx context.Context, pod string) (Readyz, error) {
	pid, err := podProcess(controllerComm, pod)
	if err != nil {
		return Readyz{}, err
	}
	sock := fmt.Sprintf("/proc/%d/root%s", pid, controllerSocket)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://controller/readyz?verbose", nil)
	if err != nil {
		return Readyz{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Readyz{}, fmt.Errorf("asking kruise-controller %s for /readyz: %w", pod, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Readyz{}, fmt.Errorf("reading kruise-controller %s's /readyz answer: %w", pod, err)
	}
	return Readyz{OK: resp.StatusCode/100 == 2, Code: resp.StatusCode, Body: string(body)}, nil
}

// podProcess finds the process named comm whose environment has POD_NAME=pod (the downward API
// env the chart gives the controller).
func podProcess(comm, pod string) (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	want := []byte("POD_NAME=" + pod)
	for _, d := range dirs {
		c, err := os.ReadFile(d + "/comm")
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		env, err := os.ReadFile(d + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				return strconv.Atoi(filepath.Base(d))
			}
		}
	}
	return 0, fmt.Errorf("no process %q of pod %s on this node", comm, pod)
}
