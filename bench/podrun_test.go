//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// podReadyTimeout bounds one pod's create → Ready; far above the seconds it takes (a barrier
// the kubelet retries on its own can add its 10 s resync).
const podReadyTimeout = 2 * time.Minute

// ctr is one container of a benchmark pod: its name and its env.
type ctr struct {
	name string
	env  []corev1.EnvVar
}

// priorityEnv marks a container with launch priority p.
func priorityEnv(p string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: lp.EnvPriority, Value: p}}
}

// benchPod is a bare pod of long-running busybox containers that honour SIGTERM, no probes
// (a container is Ready once it runs), the same program in every container and every arm.
func benchPod(ns, name string, ctrs []ctr) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](graceSeconds),
		},
	}
	for _, c := range ctrs {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name:    c.name,
			Image:   image,
			Command: []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`},
			Env:     c.env,
		})
	}
	return pod
}

// podRun is one pod from Create to Ready. Durations are from t0, the client clock just before
// Create; the other ends are receipt times of watch events, or the runtime's own records.
type podRun struct {
	t0      time.Time
	created *corev1.Pod // as Create returned it: after admission
	// createCall is the Create request's own round trip: admission is inside it.
	createCall time.Duration
	// ready: a pod watch event shows Ready=True.
	ready time.Duration
	// ctrReady: per container, the first pod status showing it ready.
	ctrReady map[string]time.Duration
	// started: per container, StartedAt as the runtime recorded it (ns resolution).
	started map[string]time.Time
	// keyAt: per barrier key (p_<n>), the first ConfigMap event that carried it; nil when the
	// barrier ConfigMap was not watched.
	keyAt map[string]time.Duration
}

// since is the runtime's start of container c, from t0.
func (r podRun) since(c string) time.Duration { return r.started[c].Sub(r.t0) }

// runPod creates pod and waits, by watch, until it is Ready; with watchBarrier it also watches
// the barrier ConfigMap named after the pod. The pod is left in place (deletePod removes it).
func (e *env) runPod(ctx context.Context, pod *corev1.Pod, watchBarrier bool) (podRun, error) {
	ns := pod.Namespace
	pw, err := e.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		return podRun{}, err
	}
	defer pw.Stop()
	var cmEvents <-chan watch.Event
	r := podRun{ctrReady: map[string]time.Duration{}, started: map[string]time.Time{}}
	if watchBarrier {
		cw, err := e.client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", lp.BarrierName(pod.Name)).String()})
		if err != nil {
			return podRun{}, err
		}
		defer cw.Stop()
		cmEvents = cw.ResultChan()
		r.keyAt = map[string]time.Duration{}
	}

	r.t0 = time.Now()
	r.created, err = e.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	r.createCall = time.Since(r.t0)
	if err != nil {
		return r, err
	}
	deadline := time.NewTimer(podReadyTimeout)
	defer deadline.Stop()
	var last *corev1.Pod
	for r.ready == 0 {
		select {
		case ev, ok := <-pw.ResultChan():
			if !ok {
				return r, fmt.Errorf("pod watch closed before Ready: %s", describePod(last))
			}
			now := time.Since(r.t0)
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			last = p
			for _, st := range p.Status.ContainerStatuses {
				if _, seen := r.ctrReady[st.Name]; !seen && st.Ready {
					r.ctrReady[st.Name] = now
				}
			}
			if podCond(p, corev1.PodReady) {
				r.ready = now
			}
		case ev, ok := <-cmEvents:
			if !ok {
				cmEvents = nil
				continue
			}
			now := time.Since(r.t0)
			if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM {
				for k := range cm.Data {
					if _, seen := r.keyAt[k]; !seen {
						r.keyAt[k] = now
					}
				}
			}
		case <-deadline.C:
			return r, fmt.Errorf("pod %s not Ready after %s: %s", pod.Name, podReadyTimeout, describePod(last))
		}
	}
	ctrs, err := e.rt.PodContainers(ctx, string(r.created.UID))
	if err != nil {
		return r, err
	}
	for _, c := range pod.Spec.Containers {
		n, ok := newestStarted(ctrs, c.Name)
		if !ok {
			return r, fmt.Errorf("pod %s: container %s has no start time in the runtime", pod.Name, c.Name)
		}
		r.started[c.Name] = n
	}
	return r, nil
}

func newestStarted(ctrs []cri.Container, name string) (time.Time, bool) {
	c, ok := cri.Newest(ctrs, name)
	if !ok || !c.StatusKnown || c.StartedAt.IsZero() {
		return time.Time{}, false
	}
	return c.StartedAt, true
}

// hasEnv says whether container i of pod has env var name.
func hasEnv(pod *corev1.Pod, i int, name string) bool {
	for _, e := range pod.Spec.Containers[i].Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// pct are the nearest-rank p50 and p99 and the extremes of one figure of runs.
type pct struct{ p50, p99, min, max time.Duration }

func pcts(rs []podRun, f func(podRun) time.Duration) pct {
	ds := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		ds = append(ds, f(r))
	}
	if len(ds) == 0 {
		return pct{}
	}
	slices.Sort(ds)
	return pct{percentile(ds, 0.5), percentile(ds, 0.99), ds[0], ds[len(ds)-1]}
}
