//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// pubTimeout bounds each step of a PodUnavailableBudget test.
const pubTimeout = 3 * time.Minute

// budgetedCloneSet creates CloneSet name with replicas pods labelled app=name, and a
// PodUnavailableBudget of the same name targeting it with maxUnavailable 1; it waits until the
// CloneSet is available and the budget allows one disruption of all replicas available.
func budgetedCloneSet(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string, replicas int32) {
	t.Helper()
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
					}},
				},
			},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	one := intstr.FromInt32(1)
	if _, err := kc.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: name},
			MaxUnavailable:  &one,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodUnavailableBudget: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, name, replicas)
	waitBudgetAllows(ctx, t, kc, ns, name, replicas)
}

// waitBudgetAllows waits until budget name counts available of its pods available and allows one
// disruption, with none under way.
func waitBudgetAllows(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string, available int32) {
	t.Helper()
	framework.WaitFor(ctx, t, pubTimeout, fmt.Sprintf("PodUnavailableBudget %s allowing 1 of %d", name, available), func(ctx context.Context) (bool, string, error) {
		b, err := kc.PolicyV1alpha1().PodUnavailableBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := b.Status
		return s.UnavailableAllowed == 1 && s.CurrentAvailable == available && len(s.DisruptedPods) == 0, fmt.Sprintf("status %+v", s), nil
	})
}

// availability watches the pods labelled app=name and records the fewest available (Ready, not
// being deleted) at any moment.
type availability struct {
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	min      int
	seenFull bool
	want     int
	lowest   string
}

func watchAvailability(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, want int) *availability {
	t.Helper()
	w, err := f.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	a := &availability{pods: map[string]*corev1.Pod{}, min: want, want: want}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			a.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(a.pods, p.Name)
			} else {
				a.pods[p.Name] = p
			}
			n := 0
			for _, q := range a.pods {
				if q.DeletionTimestamp == nil && framework.PodReady(q) {
					n++
				}
			}
			if n >= want {
				a.seenFull = true
			}
			if a.seenFull && n < a.min {
				a.min, a.lowest = n, fmt.Sprintf("%d available at %s", n, time.Now().Format(time.RFC3339Nano))
			}
			a.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return a
}

func (a *availability) fewest() (int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.min, a.lowest
}

// disruptionRequests sums kruise_webhook_admission_requests_total of the pod disruption webhook
// over the ready kruise-controller replicas.
func disruptionRequests(ctx context.Context, t *testing.T, f *framework.Framework) float64 {
	t.Helper()
	pods, err := f.ControllerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^kruise_webhook_admission_requests_total\{[^}]*webhook="pod-disruption-budget"[^}]*\} ([0-9.e+]+)$`)
	var sum float64
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
			continue
		}
		metrics, err := framework.ControllerMetrics(ctx, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(metrics, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	return sum
}
