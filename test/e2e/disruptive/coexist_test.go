//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const (
	// coexistDaemonTimeout bounds the daemon's way to (not) Ready.
	coexistDaemonTimeout = 3 * time.Minute
	// coexistRestartTimeout bounds the daemon's restart after it stopped: the kubelet's crash-loop
	// backoff doubles from 10 s for each restart within 10 minutes of the previous one, up to
	// 5 minutes (a first run waits about 1 s, back-to-back runs 10 s, 20 s, 40 s...).
	coexistRestartTimeout = 6 * time.Minute
	// coexistCRRTimeout bounds a CRR from the daemon's return to Completed.
	coexistCRRTimeout = 3 * time.Minute
	// coexistEventReason is the Event the daemon records on its Node (pkg/daemon/coexist).
	coexistEventReason  = "ConflictingDaemon"
	coexistImposterName = "kruise-daemon-imposter"
)

// coexistImposter looks like a pod of OpenKruise's kruise-daemon (its Helm chart's label, container
// and image) but its image does not exist in the loopback registry: it stays Pending and never runs.
func coexistImposter(f *framework.Framework, namespace, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: coexistImposterName, Labels: map[string]string{"control-plane": "daemon"}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "daemon", Image: f.Image("openkruise/kruise-manager:v1.9.0"), Command: []string{"/kruise-daemon"},
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
}

// coexistDaemonPod returns the kruise-daemon pod of node that is not being deleted, and how it looks.
func coexistDaemonPod(ctx context.Context, f *framework.Framework, node string) (*corev1.Pod, string, error) {
	p, err := f.DaemonPodOn(ctx, node)
	if err != nil || p == nil {
		return nil, "no kruise-daemon pod on node " + node, err
	}
	return p, coexistDescribeDaemon(p), nil
}

func coexistDescribeDaemon(p *corev1.Pod) string {
	s := fmt.Sprintf("%s ready=%t", p.Name, framework.PodReady(p))
	if st := framework.ContainerStatusOf(p, "daemon"); st != nil {
		s += fmt.Sprintf(" restarts=%d", st.RestartCount)
	}
	return s
}

func coexistRestarts(p *corev1.Pod, container string) int32 {
	if st := framework.ContainerStatusOf(p, container); st != nil {
		return st.RestartCount
	}
	return -1
}

// coexistDeleteImposter deletes the imposter (grace 1 s: the kubelet confirms it) and waits until it is gone;
// the daemon counts it as long as it exists.
func coexistDeleteImposter(ctx context.Context, t testing.TB, f *framework.Framework, namespace string) {
	t.Helper()
	err := f.Client.CoreV1().Pods(namespace).Delete(ctx, coexistImposterName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting the imposter: %v", err)
	}
	framework.WaitFor(ctx, t, time.Minute, "the imposter gone", func(ctx context.Context) (bool, string, error) {
		_, err := f.Client.CoreV1().Pods(namespace).Get(ctx, coexistImposterName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		return false, "still there", err
	})
}

// kruise-daemon refuses to act beside OpenKruise's daemon: with a pod that looks like it on the
// node, the daemon stops, is not Ready, warns on the Node and leaves a CRR alone; once the pod is
// gone it comes back and executes the CRR, once.
func TestDaemonRefusesToRunBesideOpenKruiseDaemon(t *testing.T) {
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 14*time.Minute)
	node := framework.NodeName()

	var before *corev1.Pod
	framework.WaitFor(ctx, t, coexistDaemonTimeout, "the kruise-daemon of node "+node+" Ready before the test", func(ctx context.Context) (bool, string, error) {
		p, observed, err := coexistDaemonPod(ctx, f, node)
		before = p
		return p != nil && framework.PodReady(p), observed, err
	})
	ns := f.NewNamespace(ctx, t, "coexist")
	web := f.RunningBusyboxPod(ctx, t, ns, "web", "main")
	if web.Spec.NodeName != node {
		t.Fatalf("pod web runs on %q, not on node %q", web.Spec.NodeName, node)
	}

	// Whatever happens, take the imposter away and leave a Ready daemon behind. Cleanups run
	// last-in first-out: this one before the namespace is deleted.
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), coexistDaemonTimeout+time.Minute)
		defer cancel()
		coexistDeleteImposter(cctx, t, f, ns)
		framework.WaitFor(cctx, t, coexistDaemonTimeout, "the kruise-daemon of node "+node+" Ready after the test", func(ctx context.Context) (bool, string, error) {
			p, observed, err := coexistDaemonPod(ctx, f, node)
			return p != nil && framework.PodReady(p), observed, err
		})
	})

	start := time.Now()
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, coexistImposter(f, ns, node), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the imposter: %v", err)
	}
	imposterKey := ns + "/" + coexistImposterName

	framework.WaitFor(ctx, t, coexistDaemonTimeout, "the kruise-daemon not Ready", func(ctx context.Context) (bool, string, error) {
		p, observed, err := coexistDaemonPod(ctx, f, node)
		return p != nil && !framework.PodReady(p), observed, err
	})
	t.Logf("daemon not Ready %s after the imposter was created", time.Since(start).Round(time.Second))
	// It stopped (exit 1); once the kubelet has restarted it (after its crash-loop backoff), it
	// runs and waits, still not Ready. From here on it reacts at once.
	framework.WaitFor(ctx, t, coexistRestartTimeout, "the kruise-daemon restarted and waiting (running, not Ready)", func(ctx context.Context) (bool, string, error) {
		p, observed, err := coexistDaemonPod(ctx, f, node)
		if p == nil || err != nil {
			return false, observed, err
		}
		st := framework.ContainerStatusOf(p, "daemon")
		restarted := coexistRestarts(p, "daemon") > coexistRestarts(before, "daemon")
		return restarted && st != nil && st.State.Running != nil && !framework.PodReady(p), observed, nil
	})
	t.Logf("daemon restarted and waiting %s after the imposter was created", time.Since(start).Round(time.Second))

	var warning corev1.Event
	framework.WaitFor(ctx, t, time.Minute, "a Warning Event "+coexistEventReason+" on node "+node+" naming "+imposterKey,
		func(ctx context.Context) (bool, string, error) {
			evs, err := f.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
				"involvedObject.kind": "Node", "involvedObject.name": node, "reason": coexistEventReason,
			}.String()})
			if err != nil {
				return false, "", err
			}
			var seen []string
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "Pod "+imposterKey+" is OpenKruise's kruise-daemon") {
					warning = e
					return true, e.Message, nil
				}
				seen = append(seen, e.Message)
			}
			return false, fmt.Sprintf("%d other %s Events: %q", len(seen), coexistEventReason, seen), nil
		})
	t.Logf("Event: %s", warning.Message)

	// A CRR meanwhile: the controller admits it, the daemon does not execute it.
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: "web",
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}}},
	}
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	framework.WaitCRR(ctx, t, kc, ns, "r", time.Minute, "CRR admitted", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] != ""
	})
	untouched := func(ctx context.Context) (bool, string, error) {
		c, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		observed := fmt.Sprintf("CRR phase=%q states=%+v; main restarts=%d", c.Status.Phase, c.Status.ContainerRecreateStates, coexistRestarts(p, "main"))
		for _, st := range c.Status.ContainerRecreateStates {
			if st.Phase != "" && st.Phase != appsv1alpha1.ContainerRecreateRequestPending {
				return false, observed, nil
			}
		}
		return coexistRestarts(p, "main") == 0 &&
			c.Status.Phase != appsv1alpha1.ContainerRecreateRequestRecreating &&
			c.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted, observed, nil
	}
	framework.Consistently(ctx, t, 5*time.Second, "the CRR not executed while the imposter is on the node", untouched)

	// The moment the imposter goes: still untouched, and the imposter never ran.
	if ok, observed, err := untouched(ctx); err != nil || !ok {
		t.Fatalf("before removing the imposter: CRR executed or unreadable: %s %v", observed, err)
	}
	imp, err := f.Client.CoreV1().Pods(ns).Get(ctx, coexistImposterName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the imposter: %v", err)
	}
	if imp.Status.Phase != corev1.PodPending {
		t.Fatalf("the imposter must stay Pending (its image does not exist), it is %q", imp.Status.Phase)
	}
	removed := time.Now()
	coexistDeleteImposter(ctx, t, f, ns)

	after := f.WaitDaemonPodReady(ctx, t, "", coexistDaemonTimeout)
	t.Logf("daemon Ready %s after the imposter was removed", time.Since(removed).Round(time.Second))
	done := framework.WaitCRR(ctx, t, kc, ns, "r", coexistCRRTimeout, "CRR completed", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted
	})
	if len(done.Status.ContainerRecreateStates) != 1 || done.Status.ContainerRecreateStates[0].Phase != appsv1alpha1.ContainerRecreateRequestSucceeded {
		t.Fatalf("CRR completed but main did not succeed: message %q, states %+v", done.Status.Message, done.Status.ContainerRecreateStates)
	}
	p, err := f.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod web: %v", err)
	}
	if got := coexistRestarts(p, "main"); got != 1 {
		t.Errorf("main restarted %d times, want exactly 1", got)
	}
	if after.UID != before.UID {
		t.Errorf("the kruise-daemon pod was replaced (%s -> %s): only its container should have restarted", before.Name, after.Name)
	}
	t.Logf("whole test %s", time.Since(start).Round(time.Second))
}
