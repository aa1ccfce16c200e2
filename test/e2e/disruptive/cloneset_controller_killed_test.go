//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const (
	// cloneKillReplicas is the CloneSet's size: enough pods that the rollout (one pod at a time)
	// is still under way when the leader is killed after the first pod.
	cloneKillReplicas = 6
	// cloneKillReadyDelay slows each pod's way back to Ready after its update (readiness probe
	// initialDelaySeconds), so that each step of the rollout takes a few seconds.
	cloneKillReadyDelay = 3
	// cloneKillRolloutTimeout bounds the rollout from the kill to its end: the takeover (the lease
	// runs out, leaderTakeoverTimeout), then the remaining pods one at a time.
	cloneKillRolloutTimeout = 4 * time.Minute
)

// cloneKillCensus follows the CloneSet's pods through a watch from before the rollout: every pod
// that appears or goes, the most pods that existed at once and the most that were not Ready at
// once.
type cloneKillCensus struct {
	mu          sync.Mutex
	initial     map[types.UID]string
	live        map[types.UID]*corev1.Pod
	appeared    []string
	gone        []string
	maxLive     int
	maxNotReady int
	notReadyAt  string
}

func (c *cloneKillCensus) observe(ev watch.EventType, p *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ev == watch.Deleted:
		delete(c.live, p.UID)
		c.gone = append(c.gone, p.Name+"/"+string(p.UID))
	default:
		if _, ok := c.initial[p.UID]; !ok {
			if _, seen := c.live[p.UID]; !seen {
				c.appeared = append(c.appeared, p.Name+"/"+string(p.UID))
			}
		}
		if p.DeletionTimestamp != nil {
			c.gone = append(c.gone, p.Name+" deleting")
		}
		c.live[p.UID] = p
	}
	c.maxLive = max(c.maxLive, len(c.live))
	notReady := 0
	var names []string
	for _, q := range c.live {
		if !framework.PodReady(q) {
			notReady++
			names = append(names, q.Name)
		}
	}
	if notReady > c.maxNotReady {
		c.maxNotReady, c.notReadyAt = notReady, fmt.Sprint(names)
	}
}

// cloneKillWatch starts the census of the pods matching selector in ns.
func cloneKillWatch(ctx context.Context, t *testing.T, f *framework.Framework, ns, selector string) *cloneKillCensus {
	t.Helper()
	pods := f.Client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	c := &cloneKillCensus{initial: map[types.UID]string{}, live: map[types.UID]*corev1.Pod{}}
	for i := range list.Items {
		c.initial[list.Items[i].UID] = list.Items[i].Name
		c.observe(watch.Added, &list.Items[i])
	}
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		t.Fatalf("watching pods: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				c.observe(ev.Type, p)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		rw.Stop()
		<-done
	})
	return c
}

// cloneKillStatus reads the CloneSet's status in one line.
func cloneKillStatus(cs *appsv1alpha1.CloneSet) string {
	s := cs.Status
	return fmt.Sprintf("generation %d observed %d replicas %d updated %d ready %d available %d updatedAvailable %d revisions %s→%s",
		cs.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas,
		s.UpdatedAvailableReplicas, s.CurrentRevision, s.UpdateRevision)
}

// Kill the leading kruise-controller replica (SIGKILL) in the middle of an in-place rollout of a
// CloneSet of 6 pods with maxUnavailable 1: the replica that takes over finishes the rollout
// from where it stands, with the same pods (no pod created or deleted: every one keeps its UID),
// never more pods than replicas (maxSurge 0) and never more than one not Ready at once.
func TestCloneSetRolloutSurvivesControllerKill(t *testing.T) {
	ctx := framework.Context(t, 12*time.Minute)
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ns := f.NewNamespace(ctx, t, "cloneset-kill")
	const name = "rollout"
	variant := f.BusyboxVariant(t)
	controllers := leaderWaitReplicasAvailable(ctx, t, f, 2*time.Minute)

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](cloneKillReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
							InitialDelaySeconds: cloneKillReadyDelay, PeriodSeconds: 1,
						},
					}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
				Type:           appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	// Every poll of the rollout also counts the pods: exactly the replicas, never more.
	countPods := func(ctx context.Context) ([]corev1.Pod, error) {
		list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return nil, err
		}
		if n := len(list.Items); n > cloneKillReplicas {
			return nil, fmt.Errorf("%d pods exist, more than the %d replicas (maxSurge 0)", n, cloneKillReplicas)
		}
		return list.Items, nil
	}
	waitDone := func(timeout time.Duration, desc string) {
		framework.WaitFor(ctx, t, timeout, desc, func(ctx context.Context) (bool, string, error) {
			c, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			pods, err := countPods(ctx)
			if err != nil {
				return false, "", err
			}
			s := c.Status
			return s.ObservedGeneration == c.Generation && s.UpdatedAvailableReplicas == cloneKillReplicas && s.AvailableReplicas == cloneKillReplicas &&
				s.Replicas == cloneKillReplicas && s.CurrentRevision == s.UpdateRevision && len(pods) == cloneKillReplicas, cloneKillStatus(c), nil
		})
	}
	waitDone(2*time.Minute, "the CloneSet's pods available")

	leaderPod, lease := leaderCurrent(ctx, t, f, controllers)
	oldHolder := ptr.Deref(lease.Spec.HolderIdentity, "")
	census := cloneKillWatch(ctx, t, f, ns, "app="+name)
	before := map[types.UID]corev1.Pod{}
	for _, p := range clonePodsNow(ctx, t, f, ns, name) {
		before[p.UID] = p
	}

	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, variant)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the image: %v", err)
	}
	// The first pod updated: the rollout is under way, most of it still to come.
	updatedAtKill := 0
	framework.WaitFor(ctx, t, 2*time.Minute, "a first pod updated", func(ctx context.Context) (bool, string, error) {
		pods, err := countPods(ctx)
		if err != nil {
			return false, "", err
		}
		updatedAtKill = 0
		for _, p := range pods {
			if p.Spec.Containers[0].Image == variant {
				updatedAtKill++
			}
		}
		return updatedAtKill >= 1, fmt.Sprintf("%d of %d pods given the new image", updatedAtKill, len(pods)), nil
	})

	leaderPod = *leaderGetPod(ctx, t, f, leaderPod.Name)
	killedID := framework.KillContainer(ctx, t, &leaderPod, leaderContainer)
	killedAt := time.Now()
	t.Logf("killed container %s of leader pod %s (identity %s) with %d of %d pods given the new image", killedID, leaderPod.Name, oldHolder, updatedAtKill, cloneKillReplicas)
	if updatedAtKill >= cloneKillReplicas {
		t.Fatalf("the rollout had reached every pod before the kill: nothing left to take over")
	}
	framework.WaitFor(ctx, t, leaderTakeoverTimeout, "another replica to take over the Lease", func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != oldHolder, leaderDescribeLease(l), nil
	})
	t.Logf("TAKEOVER %s after the kill", time.Since(killedAt).Round(time.Millisecond))

	waitDone(cloneKillRolloutTimeout, "the rollout finished by the new leader")
	t.Logf("ROLLOUT finished %s after the kill", time.Since(killedAt).Round(time.Millisecond))
	after := clonePodsNow(ctx, t, f, ns, name)
	if len(after) != cloneKillReplicas {
		t.Errorf("%d pods after the rollout, want %d", len(after), cloneKillReplicas)
	}
	for _, p := range after {
		old, ok := before[p.UID]
		if !ok {
			t.Errorf("pod %s (uid %s) is new: the rollout is in place", p.Name, p.UID)
			continue
		}
		st := framework.ContainerStatusOf(&p, "main")
		if p.Spec.Containers[0].Image != variant || st == nil || st.RestartCount != framework.ContainerStatusOf(&old, "main").RestartCount+1 {
			t.Errorf("pod %s runs %s, %s; want %s, restarted once", p.Name, p.Spec.Containers[0].Image, framework.DescribeContainerStatus(st), variant)
		}
	}
	census.mu.Lock()
	if len(census.appeared) > 0 || len(census.gone) > 0 {
		t.Errorf("pods created during the rollout: %v; deleted: %v (want none: in place)", census.appeared, census.gone)
	}
	if census.maxLive != cloneKillReplicas {
		t.Errorf("at most %d pods existed at once, want exactly %d", census.maxLive, cloneKillReplicas)
	}
	if census.maxNotReady > 1 {
		t.Errorf("%d pods were not Ready at once (%s), more than maxUnavailable 1", census.maxNotReady, census.notReadyAt)
	}
	census.mu.Unlock()

	// Put back what the kill changed: the kubelet restarts the container; both replicas Ready.
	f.WaitContainerRestarted(ctx, t, framework.KruiseNamespace, leaderPod.Name, leaderContainer, killedID, leaderRestartTimeout)
	leaderWaitReplicasAvailable(ctx, t, f, leaderRestartTimeout)
}

func clonePodsNow(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) []corev1.Pod {
	t.Helper()
	list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return list.Items
}
