//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// faultDaemonPod returns the kruise-daemon pod of node that is not being deleted, and how it looks.
func faultDaemonPod(ctx context.Context, f *framework.Framework, node string) (*corev1.Pod, string, error) {
	p, err := f.DaemonPodOn(ctx, node)
	if err != nil || p == nil {
		return nil, "no kruise-daemon pod on node " + node, err
	}
	return p, faultDescribeDaemon(p), nil
}

func faultDescribeDaemon(p *corev1.Pod) string {
	s := fmt.Sprintf("%s ready=%t", p.Name, framework.PodReady(p))
	if st := framework.ContainerStatusOf(p, faultDaemonContainer); st != nil {
		s += fmt.Sprintf(" restarts=%d containerID=%s", st.RestartCount, st.ContainerID)
	}
	return s
}

// faultWaitDaemonReady waits until the node's daemon pod is Ready and returns it.
func faultWaitDaemonReady(ctx context.Context, t *testing.T, f *framework.Framework, node string, timeout time.Duration, desc string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(ctx, t, timeout, "the kruise-daemon of node "+node+" Ready "+desc, func(ctx context.Context) (bool, string, error) {
		p, observed, err := faultDaemonPod(ctx, f, node)
		got = p
		return p != nil && framework.PodReady(p), observed, err
	})
	return got
}

// faultDaemonReadyAround waits until the node's daemon is Ready and returns its pod; when the
// test ends it waits for it to be Ready again, so a test that killed it leaves it serving.
func (e *faultEnv) faultDaemonReadyAround(ctx context.Context, t *testing.T) *corev1.Pod {
	t.Helper()
	pod := faultWaitDaemonReady(ctx, t, e.f, e.node, faultRestartTimeout, "before the test")
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), faultRestartTimeout+time.Minute)
		defer cancel()
		faultWaitDaemonReady(cctx, t, e.f, e.node, faultRestartTimeout, "after the test")
	})
	return pod
}

// faultWaitDaemonRolledOut waits until the daemon's DaemonSet is rolled out and each of its pods
// is ready with a daemon container of which runs (what it runs, for the message) holds.
func faultWaitDaemonRolledOut(ctx context.Context, t *testing.T, f *framework.Framework, what string, runs func(c *corev1.Container) bool) {
	t.Helper()
	framework.WaitFor(ctx, t, 4*time.Minute, "kruise-daemon rolled out with "+what, func(ctx context.Context) (bool, string, error) {
		ds, err := f.Client.AppsV1().DaemonSets(framework.KruiseNamespace).Get(ctx, hardDaemonSet, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		s := ds.Status
		desc := fmt.Sprintf("generation %d observed %d desired %d updated %d available %d", ds.Generation, s.ObservedGeneration,
			s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable)
		if s.ObservedGeneration < ds.Generation || s.UpdatedNumberScheduled != s.DesiredNumberScheduled || s.NumberAvailable != s.DesiredNumberScheduled {
			return false, desc, nil
		}
		pods, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector)})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			st := framework.ContainerStatusOf(p, faultDaemonContainer)
			var c *corev1.Container
			for j := range p.Spec.Containers {
				if p.Spec.Containers[j].Name == faultDaemonContainer {
					c = &p.Spec.Containers[j]
				}
			}
			if p.DeletionTimestamp != nil || st == nil || !st.Ready || c == nil || !runs(c) {
				return false, desc + "; pod " + p.Name + " not yet ready with " + what, nil
			}
		}
		return true, desc, nil
	})
}
