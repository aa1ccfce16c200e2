package daemon

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// criProber asks the runtime for its version every interval. Its result
// backs the "cri" readiness check and the kruise_daemon_cri_up and
// kruise_daemon_runtime_info metrics. Readiness never calls the runtime
// itself, so kubelet probes cannot pile up on a slow runtime.
type criProber struct {
	interval time.Duration
	timeout  time.Duration
	clock    clock.PassiveClock

	up   prometheus.Gauge
	info *prometheus.GaugeVec

	mu      sync.Mutex
	rt      cri.Runtime
	version cri.VersionInfo // last answer, also the labels of kruise_daemon_runtime_info
	lastOK  time.Time
	lastErr error
}

func newCRIProber(interval, timeout time.Duration, clk clock.PassiveClock) *criProber {
	return &criProber{
		interval: interval,
		timeout:  timeout,
		clock:    clk,
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kruise_daemon_cri_up",
			Help: "1 when the container runtime answered the last CRI Version call, 0 otherwise.",
		}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kruise_daemon_runtime_info",
			Help: "Container runtime this daemon talks to; the value is always 1.",
		}, []string{"runtime", "version"}),
	}
}

func (p *criProber) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.up, p.info}
}

// connected records the runtime found at start-up and its first answer.
func (p *criProber) connected(rt cri.Runtime, v cri.VersionInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rt = rt
	p.record(v, nil)
}

// record stores one probe result; p.mu must be held.
func (p *criProber) record(v cri.VersionInfo, err error) {
	if err != nil {
		p.lastErr = err
		p.up.Set(0)
		return
	}
	p.lastErr = nil
	p.lastOK = p.clock.Now()
	p.up.Set(1)
	if v != p.version {
		p.info.Reset()
		p.info.WithLabelValues(v.RuntimeName, v.RuntimeVersion).Set(1)
		p.version = v
	}
}

// probe asks the runtime once and records the answer. It logs transitions
// only, not every probe.
func (p *criProber) probe(ctx context.Context) {
	p.mu.Lock()
	rt := p.rt
	p.mu.Unlock()
	if rt == nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, p.timeout)
	v, err := rt.Version(callCtx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // shutting down: not the runtime's fault
	}

	p.mu.Lock()
	wasOK := p.lastErr == nil
	oldVersion := p.version
	p.record(v, err)
	p.mu.Unlock()

	logger := klog.FromContext(ctx)
	switch {
	case err != nil && wasOK:
		logger.Error(err, "Container runtime stopped answering", "endpoint", rt.Endpoint())
	case err == nil && !wasOK:
		logger.Info("Container runtime answers again", "endpoint", rt.Endpoint(),
			"runtime", v.RuntimeName, "version", v.RuntimeVersion)
	case err == nil && v != oldVersion:
		logger.Info("Container runtime version changed", "endpoint", rt.Endpoint(),
			"runtime", v.RuntimeName, "version", v.RuntimeVersion, "criVersion", v.RuntimeAPIVersion,
			"previousVersion", oldVersion.RuntimeVersion)
	}
}

// run probes every interval until ctx is done.
func (p *criProber) run(ctx context.Context) {
	wait.UntilWithContext(ctx, p.probe, p.interval)
}

// staleAfter is how old the last good answer may be: two missed probes
// plus one timeout, so a single slow tick does not flap readiness.
func (p *criProber) staleAfter() time.Duration {
	return 2*p.interval + p.timeout
}

// Name implements server.Checker.
func (p *criProber) Name() string { return "cri" }

// Check implements server.Checker: ready when the last CRI Version call
// succeeded and was recent.
func (p *criProber) Check(*http.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.rt == nil:
		return fmt.Errorf("not connected to a container runtime yet")
	case p.lastErr != nil:
		return fmt.Errorf("container runtime at %s does not answer: %v", p.rt.Endpoint(), p.lastErr)
	}
	if age := p.clock.Since(p.lastOK); age > p.staleAfter() {
		return fmt.Errorf("container runtime at %s last answered %s ago", p.rt.Endpoint(), age.Round(time.Second))
	}
	return nil
}

// Detail implements server.Detailer: the runtime, for /readyz?verbose.
func (p *criProber) Detail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rt == nil {
		return ""
	}
	return fmt.Sprintf("runtime=%s version=%s criVersion=%s endpoint=%s",
		p.version.RuntimeName, p.version.RuntimeVersion, p.version.RuntimeAPIVersion, p.rt.Endpoint())
}
