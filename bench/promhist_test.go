//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekruise/kruise/pkg/controller"
)

// histogram is a Prometheus histogram summed over the series that matched: cumulative counts by
// upper bound, sum and count.
type histogram struct {
	buckets map[float64]float64
	sum     float64
	count   float64
}

// parseHistogram reads the histogram name from Prometheus text, summing the series whose labels
// keep accepts.
func parseHistogram(raw []byte, name string, keep func(map[string]string) bool) (histogram, error) {
	h := histogram{buckets: map[float64]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_") {
			continue
		}
		open := strings.IndexByte(line, '{')
		sp := strings.LastIndexByte(line, ' ')
		if open < 0 || sp < open {
			continue
		}
		suffix := line[len(name):open]
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range promLabel.FindAllStringSubmatch(line[open:sp], -1) {
			labels[kv[1]] = kv[2]
		}
		le := labels["le"]
		delete(labels, "le")
		if !keep(labels) {
			continue
		}
		switch suffix {
		case "_bucket":
			b, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return h, fmt.Errorf("%s: bad le %q", name, le)
			}
			h.buckets[b] += v
		case "_sum":
			h.sum += v
		case "_count":
			h.count += v
		}
	}
	return h, sc.Err()
}

// minus is the histogram of the observations made between before and h.
func (h histogram) minus(before histogram) histogram {
	d := histogram{buckets: map[float64]float64{}, sum: h.sum - before.sum, count: h.count - before.count}
	for b, v := range h.buckets {
		d.buckets[b] = v - before.buckets[b]
	}
	return d
}

// mean of the observations, in seconds.
func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// upperBound is the upper bound of the bucket holding the q-quantile (the most a histogram can
// say), +Inf when it is in the last bucket.
func (h histogram) upperBound(q float64) float64 {
	bounds := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	rank := math.Ceil(q * h.count)
	for _, b := range bounds {
		if h.buckets[b] >= rank {
			return b
		}
	}
	return math.Inf(1)
}

// atMost is the share of the observations at or below bound (which must be a bucket bound).
func (h histogram) atMost(bound float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.buckets[bound] / h.count
}

// describe is the histogram in a line: n, mean, the p50 and p99 bucket bounds.
func (h histogram) describe() string {
	if h.count == 0 {
		return "no observations"
	}
	return fmt.Sprintf("n=%.0f mean %s, p50 ≤ %s, p99 ≤ %s", h.count, ms(h.mean()), ms(h.upperBound(0.5)), ms(h.upperBound(0.99)))
}

// ms formats seconds as milliseconds.
func ms(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%.2f ms", s*1000)
}

// apiServerMetrics reads the API server's /metrics.
func apiServerMetrics(ctx context.Context, client kubernetes.Interface) ([]byte, error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	return raw, nil
}

// controllerMetrics reads /metrics of every running kruise-controller replica (each serves
// admission, leader or not) through the unix socket in its pod, concatenated: histograms parsed
// from it sum over the replicas.
func controllerMetrics(ctx context.Context, client kubernetes.Interface) ([]byte, error) {
	pods, err := client.CoreV1().Pods(controller.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kruise-controller"})
	if err != nil {
		return nil, fmt.Errorf("listing the controller's pods: %w", err)
	}
	var out []byte
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != "Running" {
			continue
		}
		pid, err := findPodProcess(controllerComm, p.Name)
		if err != nil {
			return nil, err
		}
		sock := fmt.Sprintf("/proc/%d/root%s", pid, controllerSocket)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://controller/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("scraping %s's metrics: %w", p.Name, err)
		}
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("scraping %s's metrics: %s %v", p.Name, resp.Status, err)
		}
		out = append(out, b.Bytes()...)
		out = append(out, '\n')
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running kruise-controller pod")
	}
	return out, nil
}
