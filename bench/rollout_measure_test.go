//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// cloneSetRolloutTimeout bounds one rollout of up to a few dozen pods, and the settling of a
// workload. The minimal pod's take well under a minute here; a rollout that recreates 30
// production-shaped pods one at a time (a new claim, 3 s of init work and a sidecar's 2 s each)
// took over 5 minutes on this node.
const cloneSetRolloutTimeout = 20 * time.Minute

// rolloutRun is one rollout, from t0 (the client clock just before the spec update) to the
// receipt of watch events.
type rolloutRun struct {
	// done: the workload's status shows every pod updated, ready and available at the new
	// template.
	done time.Duration
	// lastReady: the last pod seen Ready at the new image (pod watch).
	lastReady time.Duration
	// unready: per pod present at t0, when it was first seen unavailable (not Ready, deleting
	// or gone); sorted.
	unready []time.Duration
	// ready: per pod at the new image, when it was first seen Ready so; sorted.
	ready []time.Duration
	// kept is how many pods at the end were there at t0 (same UID): updated in place.
	kept int
	// toRunning and toGate: per pod updated in place, from the kubelet's sync of the update to
	// its new container running and to its gate True (restartTrace). They tell a late release of
	// the gate from a late container start.
	toRunning, toGate []time.Duration
	// restarts: every pod present at t0 that came back Ready in a new container, for the
	// runtime's log to be joined with (runtimeTimes.parts).
	restarts []podRestart
}

// podRestart is one pod's container restart as the bench saw it: from t0 (wall clock here, to
// be set against the runtime's log), when it began (the pod unavailable in a rollout, the patch
// for the floor) and when it was Ready again, with its restartTrace.
type podRestart struct {
	t0           time.Time
	begin, ready time.Duration
	trace        restartTrace
}

// restartTrace follows one pod's restart in place after t0 through its watch events: when the
// kubelet's sync of the update was first seen (status.observedGeneration reaching a generation
// above the pod's at t0, the pod not being deleted), and after it when a new container was first
// seen running and the InPlaceUpdateReady condition first seen True. Zero: not seen.
type restartTrace struct {
	gen0                   int64
	oldID                  string
	synced, running, gated time.Duration
	// newID is the new container; ctrReady when it was first seen ready; heldByGate, whether an
	// event showed it ready and InPlaceUpdateReady True while Ready was False for a readiness gate:
	// the kubelet computing Ready from a copy of the pod older than its gate.
	newID      string
	ctrReady   time.Duration
	heldByGate bool
}

func (rt *restartTrace) see(p *corev1.Pod, container string, now time.Duration) {
	if rt.synced == 0 {
		if p.DeletionTimestamp != nil || p.Generation <= rt.gen0 || p.Status.ObservedGeneration < p.Generation {
			return
		}
		rt.synced = now
	}
	st := framework.ContainerStatusOf(p, container)
	if rt.running == 0 && st != nil && st.State.Running != nil && st.ContainerID != "" && st.ContainerID != rt.oldID {
		rt.running, rt.newID = now, st.ContainerID
	}
	gate := podCond(p, "InPlaceUpdateReady")
	if rt.gated == 0 && gate {
		rt.gated = now
	}
	if st == nil || rt.newID == "" || st.ContainerID != rt.newID || !st.Ready {
		return
	}
	if rt.ctrReady == 0 {
		rt.ctrReady = now
	}
	if ready := framework.PodConditionOf(p, corev1.PodReady); gate && ready != nil && ready.Status == corev1.ConditionFalse && ready.Reason == "ReadinessGatesNotReady" {
		rt.heldByGate = true
	}
}

// toRunning is the kubelet's sync → the new container running, when both were seen in
// different events (one event showing both bounds neither).
func (rt *restartTrace) toRunning() (time.Duration, bool) {
	return rt.running - rt.synced, rt.synced > 0 && rt.running > rt.synced
}

// readyAtImage says whether pod p runs img in its container named container, Ready, in a
// runtime container other than oldID.
func readyAtImage(p *corev1.Pod, container, img, oldID string) bool {
	if p.DeletionTimestamp != nil || specImage(p, container) != img || !podCond(p, corev1.PodReady) {
		return false
	}
	st := framework.ContainerStatusOf(p, container)
	return st != nil && st.Ready && st.ContainerID != "" && st.ContainerID != oldID
}

// specImage is the image of p's container named container, "" without one.
func specImage(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

// settledPods waits until the pods labelled app=name are exactly n, none deleting, all Ready,
// and returns them with the list's resourceVersion.
func (e *env) settledPods(ctx context.Context, ns, name string, n int) ([]corev1.Pod, string, error) {
	var pods []corev1.Pod
	var rv string
	_, err := framework.Poll(ctx, cloneSetRolloutTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + name})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		pods, rv = l.Items, l.ResourceVersion
		ready := 0
		for i := range pods {
			if pods[i].DeletionTimestamp == nil && podCond(&pods[i], corev1.PodReady) {
				ready++
			}
		}
		return len(pods) == n && ready == n, fmt.Sprintf("%d pods, %d of them Ready and not deleting, want %d", len(pods), ready, n), nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("pods of %s settling: %w", name, err)
	}
	return pods, rv, nil
}

// measureRollout changes w's image to img and follows the rollout to its end, by watch: the
// workload's status and its pods.
func (e *env) measureRollout(ctx context.Context, ns string, w workload, n int, img string, trace func(string, ...any)) (rolloutRun, error) {
	var r rolloutRun
	pods, rv, err := e.settledPods(ctx, ns, w.name(), n)
	if err != nil {
		return r, err
	}
	oldIDs := map[types.UID]string{}
	for _, p := range pods {
		if st := framework.ContainerStatusOf(&p, w.container()); st != nil {
			oldIDs[p.UID] = st.ContainerID
		}
	}
	pw, err := e.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + w.name(), ResourceVersion: rv})
	if err != nil {
		return r, err
	}
	defer pw.Stop()
	ww, err := w.watch(ctx)
	if err != nil {
		return r, err
	}
	defer ww.Stop()

	t0 := time.Now()
	gen, err := w.setImage(ctx, img)
	if err != nil {
		return r, err
	}
	unready := map[types.UID]time.Duration{}
	ready := map[types.UID]time.Duration{}
	restarts := map[types.UID]*restartTrace{}
	for _, p := range pods {
		restarts[p.UID] = &restartTrace{gen0: p.Generation, oldID: oldIDs[p.UID]}
	}
	var status string
	deadline := time.NewTimer(cloneSetRolloutTimeout)
	defer deadline.Stop()
	for r.done == 0 || len(ready) < n {
		select {
		case ev, ok := <-pw.ResultChan():
			if !ok {
				return r, fmt.Errorf("pod watch of %s closed", w.name())
			}
			now := time.Since(t0)
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if trace != nil {
				trace("%7.3f %s %s", now.Seconds(), ev.Type, describeRolloutPod(p))
			}
			oldID, old := oldIDs[p.UID]
			if _, seen := unready[p.UID]; old && !seen && (ev.Type == watch.Deleted || p.DeletionTimestamp != nil || !podCond(p, corev1.PodReady)) {
				unready[p.UID] = now
			}
			if rt := restarts[p.UID]; rt != nil && ev.Type != watch.Deleted {
				rt.see(p, w.container(), now)
			}
			if _, seen := ready[p.UID]; !seen && ev.Type != watch.Deleted && readyAtImage(p, w.container(), img, oldID) {
				ready[p.UID] = now
				if _, seen := unready[p.UID]; old && !seen {
					unready[p.UID] = now // its not-Ready status was never seen
				}
			}
		case ev, ok := <-ww.ResultChan():
			if !ok {
				return r, fmt.Errorf("watch of %s closed", w.name())
			}
			if ev.Type == watch.Error {
				return r, fmt.Errorf("watch of %s: %v", w.name(), apierrors.FromObject(ev.Object))
			}
			done, s := w.done(ev.Object, gen)
			status = s
			if trace != nil {
				trace("%7.3f %s %s: %s", time.Since(t0).Seconds(), ev.Type, w.name(), s)
			}
			if done && r.done == 0 {
				r.done = time.Since(t0)
			}
		case <-deadline.C:
			return r, fmt.Errorf("rollout of %s to %s not done after %s: %d of %d pods Ready at it; last status: %s",
				w.name(), img, cloneSetRolloutTimeout, len(ready), n, status)
		}
	}
	for _, d := range unready {
		r.unready = append(r.unready, d)
	}
	for _, d := range ready {
		r.ready = append(r.ready, d)
		r.lastReady = max(r.lastReady, d)
	}
	slices.Sort(r.unready)
	slices.Sort(r.ready)
	for uid, rt := range restarts {
		if d, ok := rt.toRunning(); ok {
			r.toRunning = append(r.toRunning, d)
		}
		if rt.gated > 0 {
			r.toGate = append(r.toGate, rt.gated-rt.synced)
		}
		if d, ok := ready[uid]; ok && rt.newID != "" {
			r.restarts = append(r.restarts, podRestart{t0: t0, begin: unready[uid], ready: d, trace: *rt})
		}
	}

	// The end state: n pods at img, none deleting (old ones may still be terminating).
	l, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + w.name()})
	if err != nil {
		return r, err
	}
	live := 0
	for i := range l.Items {
		p := &l.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if got := specImage(p, w.container()); got != img {
			return r, fmt.Errorf("rollout of %s done, but pod %s runs %q in container %s", w.name(), p.Name, got, w.container())
		}
		if _, old := oldIDs[p.UID]; old {
			r.kept++
		}
	}
	if live != n {
		return r, fmt.Errorf("rollout of %s done with %d live pods, want %d", w.name(), live, n)
	}
	return r, nil
}

// measureFloorBatch patches the image of every floor pod of pods to img at once (one
// measureFloor each) and returns their runs: the kubelet restarting as many containers at once as
// a rollout step does.
func (e *env) measureFloorBatch(ctx context.Context, pods floorPods, img string) ([]floorRun, error) {
	runs := make([]floorRun, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, name := range pods {
		wg.Go(func() { runs[i], errs[i] = e.measureFloor(ctx, name, img) })
	}
	wg.Wait()
	return runs, errors.Join(errs...)
}

// floorRun is one container restart by a direct image patch of a bare pod, from t0 (the client
// clock just before the patch).
type floorRun struct {
	unready time.Duration // the pod first seen not Ready
	ready   time.Duration // Ready again, in a new container at the new image
	// toRunning: the kubelet's sync of the patch → the new container running (restartTrace);
	// zero when not seen in different events.
	toRunning time.Duration
	// restart begins at the patch.
	restart podRestart
}

// floorPods are the floor's bare pods, one per sample of a round, so that each pod is patched
// once a round as each pod of a rollout is once a rollout. The kubelet restarts a container of a
// pod it restarted moments before late: on this machine an image patch sent as soon as the
// previous one's container was Ready took 3.0 s to Ready, sent 4 s later 1.0 s; back-to-back
// samples on one pod measured that delay, not a restart.
type floorPods []string

// createFloorPods creates n floor pods of shape named <prefix>-<i> and waits until each is Ready.
func (e *env) createFloorPods(ctx context.Context, prefix string, n int, shape podShape, img string) (floorPods, error) {
	var pods floorPods
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if err := e.createFloorPod(ctx, name, shape, img); err != nil {
			return nil, err
		}
		pods = append(pods, name)
	}
	return pods, nil
}

// pod is the floor pod of a round's sample.
func (f floorPods) pod(sample int) string { return f[sample%len(f)] }

// createFloorPod creates a floor pod (the rollout pod spec of shape, no owner) and waits until it
// is Ready.
func (e *env) createFloorPod(ctx context.Context, name string, shape podShape, img string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{"bench": "floor"}},
		Spec:       shape.podSpec(img),
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the floor pod: %w", err)
	}
	_, err := framework.Poll(ctx, cloneSetRolloutTimeout, func(ctx context.Context) (bool, string, error) {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return podCond(p, corev1.PodReady), describePod(p), nil
	})
	return err
}

// measureFloor patches a floor pod's image to img and waits, by watch, until it is Ready in
// the new container: what the kubelet needs for one in-place step of one pod.
func (e *env) measureFloor(ctx context.Context, name, img string) (floorRun, error) {
	var r floorRun
	// A list's resourceVersion is the store's current one; the pod's own, from when it last
	// changed, may have left the watch cache after a busy rollout (the watch then ends at once
	// with 410 Gone).
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return r, err
	}
	if len(list.Items) != 1 {
		return r, fmt.Errorf("floor pod %s: %d found", name, len(list.Items))
	}
	p := &list.Items[0]
	if !podCond(p, corev1.PodReady) {
		return r, fmt.Errorf("floor pod not Ready before the patch: %s", describePod(p))
	}
	var oldID string
	if st := framework.ContainerStatusOf(p, rolloutContainer); st != nil {
		oldID = st.ContainerID
	}
	rt := restartTrace{gen0: p.Generation, oldID: oldID}
	pw, err := e.client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return r, err
	}
	defer pw.Stop()
	t0 := time.Now()
	if _, err := e.client.CoreV1().Pods(e.ns).Patch(ctx, name, types.JSONPatchType, imagePatch("/spec", img), metav1.PatchOptions{}); err != nil {
		return r, fmt.Errorf("patching the floor pod's image: %w", err)
	}
	deadline := time.NewTimer(cloneSetRolloutTimeout)
	defer deadline.Stop()
	var last *corev1.Pod
	for {
		select {
		case ev, ok := <-pw.ResultChan():
			if !ok {
				return r, fmt.Errorf("floor pod watch closed: %s", describePod(last))
			}
			now := time.Since(t0)
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			last = p
			rt.see(p, rolloutContainer, now)
			if r.unready == 0 && !podCond(p, corev1.PodReady) {
				r.unready = now
			}
			if readyAtImage(p, rolloutContainer, img, oldID) {
				r.ready = now
				if r.unready == 0 {
					r.unready = now
				}
				r.toRunning, _ = rt.toRunning()
				r.restart = podRestart{t0: t0, ready: now, trace: rt}
				return r, nil
			}
		case <-deadline.C:
			return r, fmt.Errorf("floor pod not Ready at %s after %s: %s", img, cloneSetRolloutTimeout, describePod(last))
		}
	}
}

// describeRolloutPod is one line of a pod's state for the trace: Ready, the readiness gate's
// condition, the container's ID, image, state and restarts.
func describeRolloutPod(p *corev1.Pod) string {
	cond := func(t corev1.PodConditionType) string {
		return framework.DescribeCondition(framework.PodConditionOf(p, t))
	}
	ctr := "-"
	if st := framework.ContainerStatusOf(p, rolloutContainer); st != nil {
		id := st.ContainerID
		if i := strings.LastIndexByte(id, '/'); i >= 0 && len(id) > i+9 {
			id = id[i+1 : i+9]
		}
		state := "waiting"
		switch {
		case st.State.Running != nil:
			state = "running"
		case st.State.Terminated != nil:
			state = "terminated"
		}
		ctr = fmt.Sprintf("%s %s ready=%t restarts=%d image=%s", id, state, st.Ready, st.RestartCount, st.Image)
	}
	return fmt.Sprintf("%s rv=%s gen=%d/%d deleting=%t Ready=%s InPlaceUpdateReady=%s spec=%s ctr=%s", p.Name, p.ResourceVersion,
		p.Generation, p.Status.ObservedGeneration, p.DeletionTimestamp != nil, cond(corev1.PodReady), cond("InPlaceUpdateReady"), p.Spec.Containers[0].Image, ctr)
}
