//go:build bench

package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// iterationTimeout bounds one trigger → new container Ready; far above the seconds it takes.
const iterationTimeout = 2 * time.Minute

type arm string

const (
	armCRR arm = "CRR"
	armCRI arm = "CRI stop"
)

// sample is one iteration of one arm, every duration measured from the trigger (client clock
// just before Create of the CRR / just before StopContainer).
type sample struct {
	arm arm
	// ready: the pod status shows a new containerID, running and Ready (watch event received).
	ready time.Duration
	// exitSeen: the first pod status in which the old instance is no longer running.
	exitSeen time.Duration
	// stopped: CRI arm, StopContainer returned. CRR arm: the CRR's state first showed isKilled.
	stopped time.Duration
}

// TestCRRRestartLatency measures CRR creation → new container Ready against the floor, a raw CRI
// StopContainer of the same kind of container → new container Ready, on a fresh pod every
// iteration, interleaving the arms, one pod at a time.
func TestCRRRestartLatency(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-crr", "bench")

	// One untimed round per arm warms the image, the kubelet's and the daemon's caches.
	for _, a := range []arm{armCRR, armCRI} {
		if _, err := e.iteration(ctx, a, "warmup-"+strings.ToLower(strings.ReplaceAll(string(a), " ", "-"))); err != nil {
			t.Fatalf("warm-up %s: %v", a, err)
		}
	}

	var crr, floor []sample
	for i := 0; i < iterations; i++ {
		// Alternate which arm goes first, so neither always follows the other's pod deletion.
		order := []arm{armCRR, armCRI}
		if i%2 == 1 {
			order = []arm{armCRI, armCRR}
		}
		for _, a := range order {
			s, err := e.iteration(ctx, a, fmt.Sprintf("%s-%02d", map[arm]string{armCRR: "crr", armCRI: "cri"}[a], i))
			if err != nil {
				t.Fatalf("iteration %d, %s: %v", i, a, err)
			}
			t.Logf("iter %02d %-8s ready %7.3fs  old-exit-seen %7.3fs  stopped %7.3fs", i, a, s.ready.Seconds(), s.exitSeen.Seconds(), s.stopped.Seconds())
			if a == armCRR {
				crr = append(crr, s)
			} else {
				floor = append(floor, s)
			}
		}
	}
	report(t, crr, floor)
}

// iteration creates a fresh pod, waits for it to be Ready, triggers one restart of its container
// through arm, and returns the timings; the pod is deleted (and gone) before it returns.
func (e *env) iteration(ctx context.Context, a arm, name string) (sample, error) {
	pod, err := e.readyPod(ctx, name)
	defer e.deletePod(name)
	if err != nil {
		return sample{}, err
	}
	oldID := pod.Status.ContainerStatuses[0].ContainerID

	// Watch from the resourceVersion just read, so no event after the trigger is missed.
	w, err := e.client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return sample{}, err
	}
	defer w.Stop()
	var crrWatch watch.Interface
	s := sample{arm: a}
	stopErr := make(chan error, 1)
	var start time.Time
	switch a {
	case armCRR:
		crrName := "r-" + name
		crrWatch, err = e.kruise.AppsV1alpha1().ContainerRecreateRequests(e.ns).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", crrName).String(),
		})
		if err != nil {
			return sample{}, err
		}
		defer crrWatch.Stop()
		crr := &appsv1alpha1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: crrName, Namespace: e.ns},
			Spec: appsv1alpha1.ContainerRecreateRequestSpec{
				PodName:                 name,
				Containers:              []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
				TTLSecondsAfterFinished: ptr.To[int32](60),
			},
		}
		start = time.Now()
		if _, err := e.kruise.AppsV1alpha1().ContainerRecreateRequests(e.ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
			return sample{}, err
		}
		close(stopErr)
	case armCRI:
		start = time.Now()
		// StopContainer returns once the container has exited; run it aside so the watch
		// below sees the kubelet's reaction as it happens.
		go func() {
			err := e.rt.StopContainer(ctx, cri.RawContainerID(oldID), graceSeconds*time.Second)
			s.stopped = time.Since(start)
			stopErr <- err
			close(stopErr)
		}()
	}

	deadline := time.NewTimer(iterationTimeout)
	defer deadline.Stop()
	podEvents, crrEvents := w.ResultChan(), (<-chan watch.Event)(nil)
	if crrWatch != nil {
		crrEvents = crrWatch.ResultChan()
	}
	for s.ready == 0 {
		select {
		case ev, ok := <-podEvents:
			if !ok {
				return sample{}, fmt.Errorf("pod watch closed before the new container was Ready")
			}
			now := time.Since(start)
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || len(p.Status.ContainerStatuses) == 0 {
				continue
			}
			st := p.Status.ContainerStatuses[0]
			if s.exitSeen == 0 && (st.ContainerID != oldID || st.State.Running == nil) {
				s.exitSeen = now
			}
			if st.ContainerID != oldID && st.State.Running != nil && st.Ready {
				s.ready = now
			}
		case ev, ok := <-crrEvents:
			if !ok {
				crrEvents = nil
				continue
			}
			now := time.Since(start)
			if c, isCRR := ev.Object.(*appsv1alpha1.ContainerRecreateRequest); isCRR && s.stopped == 0 {
				for _, cs := range c.Status.ContainerRecreateStates {
					if cs.IsKilled {
						s.stopped = now
					}
				}
			}
		case <-deadline.C:
			return sample{}, fmt.Errorf("no Ready new container %s after the trigger", iterationTimeout)
		}
	}
	if err := <-stopErr; err != nil {
		return sample{}, fmt.Errorf("StopContainer: %w", err)
	}
	if a == armCRR {
		// The CRR must also complete; a CRR that restarted the container but failed is no success.
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, iterationTimeout, true, func(ctx context.Context) (bool, error) {
			c, err := e.kruise.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, "r-"+name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if c.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted {
				return false, nil
			}
			if len(c.Status.ContainerRecreateStates) != 1 || c.Status.ContainerRecreateStates[0].Phase != appsv1alpha1.ContainerRecreateRequestSucceeded {
				return false, fmt.Errorf("CRR completed without success: %q %+v", c.Status.Message, c.Status.ContainerRecreateStates)
			}
			return true, nil
		})
		if err != nil {
			return sample{}, fmt.Errorf("CRR r-%s: %w", name, err)
		}
	}
	return s, nil
}

// readyPod creates the benchmark pod and waits (by watch) until its container runs and is Ready.
func (e *env) readyPod(ctx context.Context, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](graceSeconds),
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   image,
				Command: []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`},
			}},
		},
	}
	created, err := e.client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	w, err := e.client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: created.ResourceVersion,
	})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	deadline := time.NewTimer(iterationTimeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch of pod %s closed before it was Ready", name)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if len(p.Status.ContainerStatuses) == 1 {
				st := p.Status.ContainerStatuses[0]
				if st.ContainerID != "" && st.State.Running != nil && st.Ready {
					return p, nil
				}
			}
		case <-deadline.C:
			return nil, fmt.Errorf("pod %s not Ready after %s", name, iterationTimeout)
		}
	}
}

// deletePod deletes the pod and waits until it is gone, so the next iteration runs alone.
func (e *env) deletePod(name string) { e.deletePodIn(e.ns, name) }

// deletePodIn deletes a pod of namespace ns and waits until it is gone.
func (e *env) deletePodIn(ns, name string) {
	ctx := context.Background()
	err := e.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, iterationTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func summarize(samples []sample, pick func(sample) time.Duration) stats {
	ds := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		ds = append(ds, pick(s))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return stats{percentile(ds, 0.5), percentile(ds, 0.9), ds[0], ds[len(ds)-1]}
}

func report(t *testing.T, crr, floor []sample) {
	ready := func(s sample) time.Duration { return s.ready }
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	c, f := summarize(crr, ready), summarize(floor, ready)
	var b strings.Builder
	fmt.Fprintf(&b, "\ntrigger → new container Ready, %d iterations per arm, fresh pod each\n\n", len(crr))
	fmt.Fprintf(&b, "| arm | p50 | p90 | min | max |\n| --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| CRR creation → Ready | %s | %s | %s | %s |\n", sec(c.p50), sec(c.p90), sec(c.min), sec(c.max))
	fmt.Fprintf(&b, "| CRI StopContainer → Ready (floor) | %s | %s | %s | %s |\n", sec(f.p50), sec(f.p90), sec(f.min), sec(f.max))
	fmt.Fprintf(&b, "| ratio CRR / floor | %.3f | %.3f | | |\n\n", c.p50.Seconds()/f.p50.Seconds(), c.p90.Seconds()/f.p90.Seconds())
	fmt.Fprintf(&b, "breakdown (p50 / p90, from the trigger):\n\n| arm | container stopped | old instance seen not running | new instance Ready |\n| --- | --- | --- | --- |\n")
	for _, x := range []struct {
		name    string
		samples []sample
		stopped string
	}{{"CRR", crr, "isKilled seen on the CRR"}, {"CRI stop", floor, "StopContainer returned"}} {
		st := summarize(x.samples, func(s sample) time.Duration { return s.stopped })
		ex := summarize(x.samples, func(s sample) time.Duration { return s.exitSeen })
		rd := summarize(x.samples, ready)
		fmt.Fprintf(&b, "| %s | %s / %s (%s) | %s / %s | %s / %s |\n", x.name, sec(st.p50), sec(st.p90), x.stopped,
			sec(ex.p50), sec(ex.p90), sec(rd.p50), sec(rd.p90))
	}
	t.Log(b.String())
}
