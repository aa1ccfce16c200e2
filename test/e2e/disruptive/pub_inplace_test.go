//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// pubTimeout bounds a rollout that the budget paces one pod at a time: each pod restarts its
// container and passes its readiness probe (3 s) before the budget lets the next one go.
const pubTimeout = 4 * time.Minute

// pubTemplate is a pod template labelled app=name whose container turns Ready 3 s after it
// starts, so that a pod updated in place is unavailable for a while, and which declares the
// InPlaceUpdateReady readiness gate (an Advanced StatefulSet updates only such pods in place).
func pubTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
			Containers: []corev1.Container{{
				Name: "main", Image: image,
				Command: []string{"sh", "-c", "rm -f /tmp/ready; sleep 3; touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 1; done"},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}},
					PeriodSeconds: 1, FailureThreshold: 1,
				},
			}},
		},
	}
}

// pubBudget is a PodUnavailableBudget over the pods app=name that lets one be unavailable.
func pubBudget(ns, name string) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
}

// pubWaitBudget waits until the budget counts total pods, all available, one allowed to go.
func pubWaitBudget(ctx context.Context, t *testing.T, e *faultEnv, name string, total int32) {
	t.Helper()
	framework.WaitFor(ctx, t, pubTimeout, "PodUnavailableBudget "+name+" counting its pods", func(ctx context.Context) (bool, string, error) {
		b, err := e.c.PolicyV1alpha1().PodUnavailableBudgets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := b.Status
		return s.TotalReplicas == total && s.CurrentAvailable == total && s.UnavailableAllowed == 1, fmt.Sprintf("status %+v", s), nil
	})
}

// unavailableWatch follows the pods app=name from a list on, and keeps the most of them that were
// ever unavailable at once: not Ready, or being deleted, as each event of the watch leaves them
// (the API server's order of writes).
type unavailableWatch struct {
	mu      sync.Mutex
	ready   map[types.UID]bool
	most    int
	history []string
}

func pubWatchUnavailable(ctx context.Context, t *testing.T, e *faultEnv, name string) *unavailableWatch {
	t.Helper()
	pods := e.f.Client.CoreV1().Pods(e.ns)
	opts := metav1.ListOptions{LabelSelector: "app=" + name}
	list, err := pods.List(ctx, opts)
	if err != nil {
		t.Fatalf("listing the pods of %s: %v", name, err)
	}
	w := &unavailableWatch{ready: map[types.UID]bool{}}
	for i := range list.Items {
		w.see(&list.Items[i])
	}
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = opts.LabelSelector
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		t.Fatalf("watching the pods of %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				w.gone(p)
				continue
			}
			w.see(p)
		}
	}()
	t.Cleanup(func() {
		cancel()
		rw.Stop()
		<-done
	})
	return w
}

func (w *unavailableWatch) see(p *corev1.Pod) {
	c := framework.PodConditionOf(p, corev1.PodReady)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ready[p.UID] = p.DeletionTimestamp == nil && c != nil && c.Status == corev1.ConditionTrue
	w.count(p.Name)
}

func (w *unavailableWatch) gone(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.ready, p.UID)
	w.count(p.Name + " (deleted)")
}

// count notes how many pods are unavailable now; w.mu is held.
func (w *unavailableWatch) count(pod string) {
	n := 0
	for _, ready := range w.ready {
		if !ready {
			n++
		}
	}
	w.most = max(w.most, n)
	w.history = append(w.history, fmt.Sprintf("%s → %d unavailable", pod, n))
}

func (w *unavailableWatch) result() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.most, append([]string(nil), w.history...)
}

// pubCheckPaced fails the test when more than one pod was unavailable at once, or none ever was
// (the rollout did not happen in place as the test means).
func pubCheckPaced(t *testing.T, w *unavailableWatch) {
	t.Helper()
	most, history := w.result()
	if most != 1 {
		t.Errorf("at most %d pods unavailable at once, want exactly 1 (the budget's maxUnavailable); the watch saw:\n%v", most, history)
	}
}

// With gate PodUnavailableBudgetUpdateGate on (TestRolloutsUnderGates sets it), a CloneSet of
// 4 whose own maxUnavailable would let all 4 go at once rolls a new image out in place under a
// PodUnavailableBudget with maxUnavailable 1: the rollout completes, a watch of the pods never
// sees more than one unavailable at a time, and the CloneSet says it waited for the budget.
func cloneSetInPlaceRolloutWaitsForTheBudget(t *testing.T) {
	ctx := framework.Context(t, 15*time.Minute)
	e := faultNewEnv(ctx, t, "pub-cloneset")

	if _, err := e.c.PolicyV1alpha1().PodUnavailableBudgets(e.ns).Create(ctx, pubBudget(e.ns, "web"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the PodUnavailableBudget: %v", err)
	}
	cs := &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: pubTemplate("web", e.f.Image("public/busybox:1.35")),
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
					MaxUnavailable:  ptr.To(intstr.FromString("100%")),
				},
			},
		},
	}
	if _, err := e.c.AppsV1beta1().CloneSets(e.ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CloneSet: %v", err)
	}
	pubWaitCloneSet(ctx, t, e, "web", 4)
	pubWaitBudget(ctx, t, e, "web", 4)
	before := map[types.UID]bool{}
	for _, p := range pubPods(ctx, t, e, "web") {
		before[p.UID] = true
	}

	w := pubWatchUnavailable(ctx, t, e, "web")
	variant := e.f.BusyboxVariant(t)
	preDownloadRetryUpdate(ctx, t, e.c.AppsV1beta1().CloneSets(e.ns), "web", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = variant
	})
	st := pubWaitCloneSet(ctx, t, e, "web", 4)
	for _, p := range pubPods(ctx, t, e, "web") {
		if !before[p.UID] || p.Spec.Containers[0].Image != variant || p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision {
			t.Errorf("pod %s (uid %s) runs %s at %s: want the pods from before, updated in place to %s at %s",
				p.Name, p.UID, p.Spec.Containers[0].Image, p.Labels[appsv1.ControllerRevisionHashLabelKey], variant, st.UpdateRevision)
		}
	}
	pubCheckPaced(t, w)
	e.f.WaitObjectEvent(ctx, t, e.ns, "CloneSet", "web", budgetwait.EventReason, time.Minute, "waits (UPDATE)", "PodUnavailableBudget")
	framework.WaitFor(ctx, t, time.Minute, "condition PodUnavailableBudgetWait gone once no pod waits", func(ctx context.Context) (bool, string, error) {
		cs, err := e.c.AppsV1beta1().CloneSets(e.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range cs.Status.Conditions {
			if c.Type == appsv1beta1.CloneSetConditionPodUnavailableBudgetWait {
				return false, fmt.Sprintf("%+v", c), nil
			}
		}
		return true, "", nil
	})
}

// The same for an Advanced StatefulSet of 4 updating in place in parallel (podManagementPolicy
// Parallel, maxUnavailable 100%).
func statefulSetInPlaceRolloutWaitsForTheBudget(t *testing.T) {
	ctx := framework.Context(t, 15*time.Minute)
	e := faultNewEnv(ctx, t, "pub-sts")

	if _, err := e.c.PolicyV1alpha1().PodUnavailableBudgets(e.ns).Create(ctx, pubBudget(e.ns, "db"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the PodUnavailableBudget: %v", err)
	}
	set := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "db"},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:            ptr.To[int32](4),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template:            pubTemplate("db", e.f.Image("public/busybox:1.35")),
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
					PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType,
					MaxUnavailable:  ptr.To(intstr.FromString("100%")),
				},
			},
		},
	}
	if _, err := e.c.AppsV1beta1().StatefulSets(e.ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the StatefulSet: %v", err)
	}
	pubWaitStatefulSet(ctx, t, e, "db", 4)
	pubWaitBudget(ctx, t, e, "db", 4)
	before := map[types.UID]bool{}
	for _, p := range pubPods(ctx, t, e, "db") {
		before[p.UID] = true
	}

	w := pubWatchUnavailable(ctx, t, e, "db")
	variant := e.f.BusyboxVariant(t)
	preDownloadRetryUpdate(ctx, t, e.c.AppsV1beta1().StatefulSets(e.ns), "db", func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = variant
	})
	st := pubWaitStatefulSet(ctx, t, e, "db", 4)
	for _, p := range pubPods(ctx, t, e, "db") {
		if !before[p.UID] || p.Spec.Containers[0].Image != variant || p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision {
			t.Errorf("pod %s (uid %s) runs %s at %s: want the pods from before, updated in place to %s at %s",
				p.Name, p.UID, p.Spec.Containers[0].Image, p.Labels[appsv1.ControllerRevisionHashLabelKey], variant, st.UpdateRevision)
		}
	}
	pubCheckPaced(t, w)
	e.f.WaitObjectEvent(ctx, t, e.ns, "StatefulSet", "db", budgetwait.EventReason, time.Minute, "waits (UPDATE)", "PodUnavailableBudget")
}

func pubPods(ctx context.Context, t *testing.T, e *faultEnv, name string) []corev1.Pod {
	t.Helper()
	list, err := e.f.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("listing the pods of %s: %v", name, err)
	}
	return list.Items
}

// pubWaitCloneSet waits until CloneSet name has want pods, all updated and available.
func pubWaitCloneSet(ctx context.Context, t *testing.T, e *faultEnv, name string, want int32) appsv1beta1.CloneSetStatus {
	t.Helper()
	var st appsv1beta1.CloneSetStatus
	framework.WaitFor(ctx, t, pubTimeout, fmt.Sprintf("CloneSet %s with %d pods updated and available", name, want), func(ctx context.Context) (bool, string, error) {
		cs, err := e.c.AppsV1beta1().CloneSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st = cs.Status
		return st.ObservedGeneration == cs.Generation && st.Replicas == want && st.UpdatedReplicas == want &&
			st.UpdatedAvailableReplicas == want && st.AvailableReplicas == want, fmt.Sprintf("status %+v", st), nil
	})
	return st
}

// pubWaitStatefulSet waits until StatefulSet name has want pods, all updated and available.
func pubWaitStatefulSet(ctx context.Context, t *testing.T, e *faultEnv, name string, want int32) appsv1beta1.StatefulSetStatus {
	t.Helper()
	var st appsv1beta1.StatefulSetStatus
	framework.WaitFor(ctx, t, pubTimeout, fmt.Sprintf("StatefulSet %s with %d pods updated and available", name, want), func(ctx context.Context) (bool, string, error) {
		s, err := e.c.AppsV1beta1().StatefulSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st = s.Status
		return st.ObservedGeneration == s.Generation && st.Replicas == want && st.UpdatedReplicas == want &&
			st.AvailableReplicas == want && st.CurrentRevision == st.UpdateRevision, fmt.Sprintf("status %+v", st), nil
	})
	return st
}
