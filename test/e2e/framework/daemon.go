package framework

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// DaemonSelector selects the kruise-daemon pods.
const DaemonSelector = "app.kubernetes.io/name=kruise-daemon"

// WaitDaemonPodReady waits until a kruise-daemon pod that is not being deleted, and whose UID is
// not notUID, is Ready, and returns it.
func (f *Framework) WaitDaemonPodReady(ctx context.Context, t testing.TB, notUID string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, timeout, "a Ready kruise-daemon pod", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: DaemonSelector})
		if err != nil {
			return false, "", err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if string(p.UID) == notUID || p.DeletionTimestamp != nil {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					got = p
					return true, "ready", nil
				}
			}
		}
		return false, f.DescribePods(ctx, KruiseNamespace, DaemonSelector), nil
	})
	return got
}

// DaemonPodOn returns the kruise-daemon pod of node that is not being deleted, or nil when there
// is none (between a kill and the DaemonSet's replacement, for instance).
func (f *Framework) DaemonPodOn(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := f.Client.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: DaemonSelector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, nil
}

// DaemonHealthAddr is where the node's kruise-daemon serves /healthz and /readyz (host network,
// loopback in the local overlay).
var DaemonHealthAddr = envOr("KRUISE_E2E_DAEMON_HEALTH_ADDR", "127.0.0.1:10223")

// Readyz is one answer of the daemon's /readyz?verbose.
type Readyz struct {
	// OK is true on a 2xx answer.
	OK   bool
	Code int
	// Body lists every check, one a line: "[+]name ok (detail)" or "[-]name failed: reason".
	Body string
}

// Check returns the line of the named check and whether it passed; found is false when the
// answer does not list it.
func (r Readyz) Check(name string) (line string, passed, found bool) {
	sc := bufio.NewScanner(strings.NewReader(r.Body))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "[+]"+name+" "):
			return l, true, true
		case strings.HasPrefix(l, "[-]"+name+" "):
			return l, false, true
		}
	}
	return "", false, false
}

func (r Readyz) String() string {
	return fmt.Sprintf("HTTP %d: %s", r.Code, strings.ReplaceAll(strings.TrimSpace(r.Body), "\n", "; "))
}

// DaemonReadyz asks the node's kruise-daemon for /readyz?verbose.
func DaemonReadyz(ctx context.Context) (Readyz, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+DaemonHealthAddr+"/readyz?verbose", nil)
	if err != nil {
		return Readyz{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Readyz{}, fmt.Errorf("asking the daemon for /readyz: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Readyz{}, fmt.Errorf("reading the daemon's /readyz answer: %w", err)
	}
	return Readyz{OK: resp.StatusCode/100 == 2, Code: resp.StatusCode, Body: string(body)}, nil
}

// WaitDaemonCheck waits until the daemon's /readyz lists check as passed (want true) or failed
// (want false), and returns that answer. A failing check must also fail /readyz as a whole, and a
// passing one is awaited together with a passing /readyz.
func WaitDaemonCheck(ctx context.Context, t testing.TB, check string, want bool, timeout time.Duration) Readyz {
	t.Helper()
	var got Readyz
	desc := fmt.Sprintf("the daemon's /readyz with check %q passing", check)
	if !want {
		desc = fmt.Sprintf("the daemon's /readyz failing with check %q", check)
	}
	WaitFor(ctx, t, timeout, desc, func(ctx context.Context) (bool, string, error) {
		r, err := DaemonReadyz(ctx)
		if err != nil {
			// Not listening (restarting, say): not the answer either way.
			return false, "", Retry(err)
		}
		got = r
		_, passed, found := r.Check(check)
		if !found {
			return false, r.String(), nil
		}
		if want {
			return passed && r.OK, r.String(), nil
		}
		return !passed && !r.OK, r.String(), nil
	})
	return got
}
