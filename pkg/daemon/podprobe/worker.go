package podprobe

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// key names a worker: one per probe of one pod instance.
type key struct {
	uid   string
	probe string
}

// job is what a worker probes: one probe of a NodePodProbe entry.
type job struct {
	namespace, pod, uid, ip string
	container, probeName    string
	probe                   corev1.Probe
}

func (j job) key() key { return key{uid: j.uid, probe: j.probeName} }

// same says whether a running worker can keep probing for j: anything else
// that changed replaces it.
func (j job) same(o job) bool {
	return j.namespace == o.namespace && j.pod == o.pod && j.probeName == o.probeName && j.uid == o.uid && j.ip == o.ip &&
		j.container == o.container && equality.Semantic.DeepEqual(j.probe, o.probe)
}

// result is a worker's reported state: what the status shows for its probe.
type result struct {
	state      appsv1alpha1.ProbeState
	msg        string
	probeTime  time.Time
	transition time.Time
}

// seconds reads a probe's number, unset (or below one) meaning 1, as
// OpenKruise's prober: the CRD does not default them.
func seconds(n int32) time.Duration { return time.Duration(atLeastOne(n)) * time.Second }

func atLeastOne(n int32) int32 {
	if n < 1 {
		return 1
	}
	return n
}

// env is what workers share: the controller's readers and hooks.
type workerEnv struct {
	node      string
	pod       func(namespace, name string) *corev1.Pod
	runtime   Execer
	now       func() time.Time
	nodeAddrs func() []netip.Addr
	metrics   *Metrics
	// changed is called when a worker's reported result changed.
	changed func()
}

// worker probes one job. probeOnce runs on the worker's goroutine only;
// the reported result is read by the status writer under mu.
type worker struct {
	env *workerEnv
	job job
	key key

	// The last container instance probed (the pod status's ID), the last
	// probe result and how many times in a row it came.
	containerID string
	last        appsv1alpha1.ProbeState
	run         int32
	// refusedLogged keeps a refused address to one log line per worker.
	refusedLogged bool
	// verified is the container ID the runtime has confirmed is the pod's.
	verified string

	mu       sync.Mutex
	reported *result
}

func newWorker(env *workerEnv, j job) *worker {
	return &worker{env: env, job: j, key: j.key()}
}

// current is the worker's reported result; ok is false until it has one.
func (w *worker) current() (result, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reported == nil {
		return result{}, false
	}
	return *w.reported, true
}

// report sets the reported result; the status is told only when the state
// or the message changed, so that steady probing writes nothing.
func (w *worker) report(state appsv1alpha1.ProbeState, msg string) {
	now := w.env.now()
	w.mu.Lock()
	prev := w.reported
	if prev != nil && prev.state == state && prev.msg == msg {
		w.mu.Unlock()
		return
	}
	r := &result{state: state, msg: msg, probeTime: now, transition: now}
	if prev != nil && prev.state == state {
		r.transition = prev.transition
	}
	w.reported = r
	w.mu.Unlock()
	w.env.changed()
}

// jitter is how long the first probe waits: a random part of the period, so
// that the workers a restart (or a new NodePodProbe) starts together do not
// probe in lock-step, as the kubelet's workers after its restart.
func jitter(period time.Duration, rnd func() float64) time.Duration {
	f := rnd()
	if f < 0 || f >= 1 {
		f = 0
	}
	return time.Duration(f * float64(period))
}

// loop probes every period until ctx ends, starting after wait.
func (w *worker) loop(ctx context.Context, clk clock.WithTicker, wait time.Duration) {
	period := seconds(w.job.probe.PeriodSeconds)
	first := clk.NewTimer(wait)
	select {
	case <-ctx.Done():
		first.Stop()
		return
	case <-first.C():
	}
	ticker := clk.NewTicker(period)
	defer ticker.Stop()
	for {
		w.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// probeOnce is one period of the worker, as the kubelet's: find the
// container instance in the pod's status, wait out the initial delay, run
// the probe, and report once the threshold of equal results is met.
func (w *worker) probeOnce(ctx context.Context) {
	logger := klog.FromContext(ctx)
	j := &w.job
	pod := w.env.pod(j.namespace, j.pod)
	if pod == nil || string(pod.UID) != j.uid || pod.Spec.NodeName != w.env.node {
		return // not this node's pod (yet, or any more): nothing to probe
	}
	cs := containerStatus(pod, j.container)
	if cs == nil || cs.ContainerID == "" {
		return // not created yet
	}
	if cs.ContainerID != w.containerID {
		if w.containerID != "" {
			// A new instance: its results start again from Unknown.
			logger.V(4).Info("Probed container restarted", "pod", klog.KObj(pod), "container", j.container, "probe", j.probeName)
			w.report(appsv1alpha1.ProbeUnknown, "")
		}
		w.containerID = cs.ContainerID
		w.last, w.run = "", 0
	}
	if cs.State.Running == nil {
		w.last, w.run = "", 0
		w.report(appsv1alpha1.ProbeFailed, "container not running")
		return
	}
	if w.env.now().Sub(cs.State.Running.StartedAt.Time) < seconds(j.probe.InitialDelaySeconds) {
		return
	}

	kind := kindOf(&j.probe)
	out := w.runProbe(ctx, pod, kind)
	w.env.metrics.probed(kind, out)
	if out.err != nil {
		if ctx.Err() == nil {
			logger.V(2).Info("Probe could not run", "pod", klog.KObj(pod), "probe", j.probeName, "err", out.err)
		}
		return
	}
	if out.state == w.last {
		w.run++
	} else {
		w.last, w.run = out.state, 1
	}
	threshold := atLeastOne(j.probe.SuccessThreshold)
	if out.state == appsv1alpha1.ProbeFailed {
		threshold = atLeastOne(j.probe.FailureThreshold)
	}
	if w.run >= threshold {
		w.report(out.state, out.msg)
	}
}

// runProbe runs the probe's handler once, within its timeout.
func (w *worker) runProbe(ctx context.Context, pod *corev1.Pod, kind string) outcome {
	p := &w.job.probe
	timeout := seconds(p.TimeoutSeconds)
	switch kind {
	case kindExec:
		// The container ID comes from the status of the pod with this
		// UID, and the runtime confirms it once per instance: the command
		// runs in that pod's container and no other.
		id := cri.RawContainerID(w.containerID)
		if w.verified != id {
			if err := ownContainer(ctx, w.env.runtime, w.job.uid, w.job.container, id); err != nil {
				if errors.Is(err, errForeignContainer) {
					if !w.refusedLogged {
						w.refusedLogged = true
						klog.FromContext(ctx).Info("Probe container refused", "pod", klog.KObj(pod), "probe", w.job.probeName,
							"containerID", id, "reason", err.Error())
					}
					return failed("%s", err.Error())
				}
				return outcome{err: err}
			}
			w.verified = id
		}
		return runExec(ctx, w.env.runtime, id, p.Exec.Command, timeout)
	case kindTCP, kindHTTP:
		var port intstr.IntOrString
		if kind == kindTCP {
			port = p.TCPSocket.Port
		} else {
			port = p.HTTPGet.Port
		}
		n, err := resolvePort(port, pod, w.job.container)
		if err != nil {
			return failed("%s", err.Error())
		}
		ip, err := target(pod, w.job.ip, w.env.nodeAddrs())
		if err != nil {
			if !w.refusedLogged {
				w.refusedLogged = true
				klog.FromContext(ctx).Info("Probe address refused", "pod", klog.KObj(pod), "probe", w.job.probeName,
					"ip", w.job.ip, "reason", err.Error())
			}
			return failed("%s", err.Error())
		}
		addr := netip.AddrPortFrom(ip, n)
		if kind == kindTCP {
			return runTCP(ctx, addr, timeout)
		}
		return runHTTP(ctx, p.HTTPGet, addr, timeout)
	case kindGRPC:
		return failed("grpc probes are not supported")
	}
	return failed("the probe has no handler")
}

// containerStatus is the status of the named container (a regular one: the
// pod informer keeps no init container statuses).
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
