package crrexec

import (
	"context"
	"errors"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzHTTPGetRequest builds the request of an httpGet preStop hook from
// arbitrary pod-spec fields (scheme, host, path, port as number or name,
// a header) and pod IP. Invariants: no panic; deterministic; a port is a
// number in 1-65535 (a name is looked up among the container's ports, then
// read as a number), anything else an error; a request built goes to the
// hook's host (or the pod IP) on that port with the hook's scheme (HTTP or
// HTTPS, any case; http by default), whatever the path holds (but for an opaque "name:rest" one,
// which gives no host, as with the kubelet), and carries the header.
func FuzzHTTPGetRequest(f *testing.F) {
	f.Add("", "", "/shutdown", true, int32(8080), "", "X-Reason", "recreate", "10.0.0.5")
	f.Add("HTTPS", "example.com", "/drain?x=1", false, int32(0), "http", "Host", "vhost", "10.0.0.5")
	f.Add("HTTP", "", "drain", false, int32(0), "9090", "", "", "fd00::5")
	f.Add("", "", "/", false, int32(0), "nope", "", "", "10.0.0.5")
	f.Add("", "", "/", true, int32(0), "", "", "", "10.0.0.5")
	f.Add("", "", "/", true, int32(70000), "", "", "", "10.0.0.5")
	f.Add("", "", "/", false, int32(0), "-1", "", "", "10.0.0.5")
	f.Add("", "", "http://other.example/x", true, int32(80), "", "", "", "10.0.0.5")
	f.Add("", "", "//other.example/x", true, int32(80), "", "", "", "10.0.0.5")
	f.Add("", "", "mailto:x", true, int32(80), "", "", "", "10.0.0.5")
	f.Add("", "", "%zz", true, int32(80), "", "", "", "10.0.0.5")
	f.Add("", "", "/a b", true, int32(80), "", "Accept", "", "10.0.0.5")
	f.Add("ftp", "", "/", true, int32(21), "", "Bad Header", "x\ny", "")
	f.Fuzz(func(t *testing.T, scheme, host, path string, portIsInt bool, portInt int32, portStr, headerName, headerValue, podIP string) {
		port := intstr.FromString(portStr)
		if portIsInt {
			port = intstr.FromInt32(portInt)
		}
		ports := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}}
		p := PreStop{
			Handler: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
				Scheme: corev1.URIScheme(scheme), Host: host, Path: path, Port: port,
				HTTPHeaders: []corev1.HTTPHeader{{Name: headerName, Value: headerValue}},
			}},
			PodIP: podIP,
			Ports: ports,
		}

		n, perr := resolvePort(port, ports)
		if n2, perr2 := resolvePort(port, ports); n2 != n || (perr == nil) != (perr2 == nil) {
			t.Fatalf("resolvePort(%v) is not deterministic", port)
		}
		switch {
		case perr != nil:
			if n != 0 {
				t.Fatalf("resolvePort(%v) = %d with error %v", port, n, perr)
			}
		case n < 1 || n > 65535:
			t.Fatalf("resolvePort(%v) = %d", port, n)
		case portIsInt && n != int(portInt):
			t.Fatalf("resolvePort(%d) = %d", portInt, n)
		case !portIsInt && portStr == "http" && n != 8080:
			t.Fatalf("resolvePort(http) = %d, want 8080", n)
		case !portIsInt && portStr != "http" && portStr != "metrics":
			if v, err := strconv.Atoi(portStr); err != nil || v != n {
				t.Fatalf("resolvePort(%q) = %d", portStr, n)
			}
		}

		r := NewRunner(nil)
		req, err := r.httpRequest(p)
		if _, err2 := r.httpRequest(p); (err == nil) != (err2 == nil) {
			t.Fatalf("httpRequest is not deterministic: %v, then %v", err, err2)
		}
		wantHost := host
		if wantHost == "" {
			wantHost = podIP
		}
		if perr != nil || wantHost == "" {
			if err == nil {
				t.Fatalf("port %v (%v), host %q: request built", port, perr, wantHost)
			}
			return
		}
		if err != nil {
			return
		}
		wantScheme := strings.ToLower(scheme)
		switch wantScheme {
		case "":
			wantScheme = "http"
		case "http", "https":
		default:
			// The API admits HTTP and HTTPS only; another scheme makes
			// the request fail when sent.
			return
		}
		if req.URL.Scheme != wantScheme {
			t.Fatalf("scheme %q, want %q", req.URL.Scheme, wantScheme)
		}
		if u, err := url.Parse(path); err == nil && u.Opaque != "" {
			// "name:rest" is an opaque URL: as with the kubelet, the
			// request has no host and fails when sent.
			return
		}
		if want := net.JoinHostPort(wantHost, strconv.Itoa(n)); req.URL.Host != want {
			t.Fatalf("path %q: request to host %q, want %q (URL %s)", path, req.URL.Host, want, req.URL)
		}
		if headerName != "" && !strings.EqualFold(headerName, "Accept") && req.Header.Values(headerName) == nil {
			t.Fatalf("header %q lost", headerName)
		}
	})
}

// FuzzSleepHook runs a sleep preStop hook of any number of seconds when no
// grace is left. Invariants: no panic, no wait; a hook of zero or fewer
// seconds does nothing; any positive number of seconds, however large, is
// cut short by the grace and says so (ErrGraceExceeded), never mistaken for
// no sleep at all.
func FuzzSleepHook(f *testing.F) {
	for _, n := range []int64{0, -1, 1, 30, math.MaxInt64, math.MinInt64, 9223372037, 18446744074} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		r := NewRunner(nil)
		p := PreStop{
			Handler:  &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: n}},
			Deadline: time.Now().Add(-time.Second),
		}
		err := r.runSleep(context.Background(), p)
		switch {
		case n <= 0 && err != nil:
			t.Fatalf("sleep of %ds: %v", n, err)
		case n > 0 && !errors.Is(err, ErrGraceExceeded):
			t.Fatalf("sleep of %ds with no grace left: %v, want ErrGraceExceeded", n, err)
		}
	})
}
