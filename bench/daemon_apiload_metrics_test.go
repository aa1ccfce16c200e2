//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiMetrics is the part of the API server's /metrics the API-load benchmark reads. Keys are
// "group/resource" ("" group for core), as auditEvent.Resource gives them.
type apiMetrics struct {
	// watches: WATCH requests open now (apiserver_longrunning_requests{verb="WATCH"}; Kubernetes
	// 1.34 has no registered-watchers gauge any more).
	watches map[string]float64
	// watchEvents: events sent to watchers so far (apiserver_watch_events_total).
	watchEvents map[string]float64
	// requests: requests served so far, by verb (apiserver_request_total).
	requests map[string]float64
	// writes: write requests (POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION) served so far,
	// by "VERB group/resource[/subresource]" (apiserver_request_total).
	writes map[string]float64
}

var promLabel = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// scrapeAPIServer reads the API server's /metrics with client's (admin) credentials.
func scrapeAPIServer(ctx context.Context, client kubernetes.Interface) (apiMetrics, error) {
	m := apiMetrics{watches: map[string]float64{}, watchEvents: map[string]float64{}, requests: map[string]float64{}, writes: map[string]float64{}}
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return m, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		open := strings.IndexByte(line, '{')
		sp := strings.LastIndexByte(line, ' ')
		if open < 0 || sp < open {
			continue // no labels: none of ours
		}
		name := line[:open]
		var dst map[string]float64
		switch name {
		case "apiserver_longrunning_requests":
			dst = m.watches
		case "apiserver_watch_events_total":
			dst = m.watchEvents
		case "apiserver_request_total":
			dst = m.requests
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range promLabel.FindAllStringSubmatch(line[open:sp], -1) {
			labels[kv[1]] = kv[2]
		}
		switch name {
		case "apiserver_longrunning_requests":
			if labels["verb"] == "WATCH" {
				dst[labels["group"]+"/"+labels["resource"]] += v
			}
		case "apiserver_watch_events_total":
			dst[labels["group"]+"/"+labels["resource"]] += v
		case "apiserver_request_total":
			dst[labels["verb"]] += v
			switch labels["verb"] {
			case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
				r := labels["group"] + "/" + labels["resource"]
				if labels["subresource"] != "" {
					r += "/" + labels["subresource"]
				}
				m.writes[labels["verb"]+" "+r] += v
			}
		}
	}
	return m, sc.Err()
}

// apiWindow is the API server measured over one window.
type apiWindow struct {
	from, to      time.Time
	cpu           float64 // % of one core
	rss, hwm      int64   // at the end of the window
	before, after apiMetrics
}

func (w apiWindow) seconds() float64 { return w.to.Sub(w.from).Seconds() }

// rate is the per-second increase of the counters in m between before and after, summed over keep.
func (w apiWindow) rate(m func(apiMetrics) map[string]float64, keep func(string) bool) float64 {
	var d float64
	for k, v := range m(w.after) {
		if keep(k) {
			d += v - m(w.before)[k]
		}
	}
	return d / w.seconds()
}

// measureAPIServer samples the API server process (pid) and its metrics at the start and the end of
// a window of length d.
func measureAPIServer(ctx context.Context, client kubernetes.Interface, pid int, d time.Duration) (apiWindow, error) {
	w := apiWindow{}
	var err error
	if w.before, err = scrapeAPIServer(ctx, client); err != nil {
		return w, err
	}
	a, err := sampleProcess(pid)
	if err != nil {
		return w, fmt.Errorf("sampling the API server: %w", err)
	}
	w.from = a.at
	if err := runWindow(ctx, d); err != nil {
		return w, err
	}
	b, err := sampleProcess(pid)
	if err != nil {
		return w, fmt.Errorf("sampling the API server: %w", err)
	}
	w.to, w.cpu, w.rss, w.hwm = b.at, cpuPercent(a, b), b.rss, b.hwm
	w.after, err = scrapeAPIServer(ctx, client)
	return w, err
}

// runWindow lets a measurement window run for d (a duration, not a wait for a condition).
func runWindow(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func readAPIServerPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the API server's PID: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("parsing the API server's PID in %s: %v", path, err)
	}
	return pid
}

// anonRSS is the process's resident anonymous memory (RssAnon): unlike VmRSS it leaves out the
// binary's text, which the page cache shares between all the daemons.
func anonRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing RssAnon of /proc/%d/status: %w", pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", pid)
}

func envDurationOr(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil && d > 0 {
		return d
	}
	return def
}

// countStats is the spread of one count over the daemons.
type countStats struct{ min, median, max, sum int }

func spreadOf(counts []int) countStats {
	if len(counts) == 0 {
		return countStats{}
	}
	s := append([]int(nil), counts...)
	sort.Ints(s)
	out := countStats{min: s[0], median: s[len(s)/2], max: s[len(s)-1]}
	for _, c := range s {
		out.sum += c
	}
	return out
}

// sortedKinds returns m's keys in order.
func sortedKinds[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
