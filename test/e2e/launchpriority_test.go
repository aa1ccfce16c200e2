//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// slowReadyContainer becomes Ready 2 s after it starts (it creates the file its readiness probe
// looks for after sleeping), so that the containers of one priority level are Ready a measurable
// time after they start: container start times have a resolution of 1 s, and a level released
// only once the level above is Ready then starts at least one second later.
func slowReadyContainer(f *framework.Framework, name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{
		Name:    name,
		Image:   f.Image("public/busybox:1.35"),
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 2; touch /tmp/ready; while true; do sleep 1; done"},
		Env:     env,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}},
			PeriodSeconds: 1,
		},
	}
}

func priorityEnv(p string) corev1.EnvVar { return corev1.EnvVar{Name: lp.EnvPriority, Value: p} }

// waitLaunched waits until every container of the pod is Ready and the pod is annotated
// completed.
func waitLaunched(ctx context.Context, t *testing.T, f *framework.Framework, namespace, name string) *corev1.Pod {
	t.Helper()
	return f.WaitPod(ctx, t, namespace, name, 2*time.Minute, "every container Ready, launch priority completed", func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod ended in phase %s", p.Status.Phase)
		}
		if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return false, nil
		}
		for _, st := range p.Status.ContainerStatuses {
			if !st.Ready {
				return false, nil
			}
		}
		return p.Annotations[lp.AnnotationCompleted] == "true", nil
	})
}

// checkStartOrder checks that the containers started in the given order (highest priority
// first), each in a later second than the one before: strictly increasing startedAt.
func checkStartOrder(t *testing.T, pod *corev1.Pod, order ...string) {
	t.Helper()
	var prev time.Time
	var seen []string
	for i, name := range order {
		st := framework.ContainerStatusOf(pod, name)
		if st == nil || st.State.Running == nil {
			t.Errorf("pod %s: container %s is not running: %s", pod.Name, name, framework.DescribeSidecarPod(pod))
			return
		}
		at := st.State.Running.StartedAt.Time
		seen = append(seen, fmt.Sprintf("%s@%s", name, at.Format("15:04:05")))
		if i > 0 && !at.After(prev) {
			t.Errorf("pod %s: container %s started at %s, not after %s (%s); start times: %v",
				pod.Name, name, at.Format(time.RFC3339), order[i-1], prev.Format(time.RFC3339), seen)
		}
		prev = at
	}
	t.Logf("pod %s: start times in priority order: %s", pod.Name, strings.Join(seen, ", "))
}

// checkBarrier checks what the webhook and the barrier controller left: each container below
// the top priority waits on KRUISE_CONTAINER_BARRIER from key p_<priority> of one ConfigMap (the
// wanted name when given), which the pod owns, whose keys are all p_* and hold every key waited
// on; and the completed annotation. It returns the ConfigMap's name.
func checkBarrier(ctx context.Context, t *testing.T, f *framework.Framework, pod *corev1.Pod, wantName string, wantKeys map[string]string) string {
	t.Helper()
	cmName := ""
	waited := map[string]string{}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name != lp.EnvBarrier {
				continue
			}
			if e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
				t.Errorf("pod %s container %s: %s is not from a ConfigMap key: %+v", pod.Name, c.Name, lp.EnvBarrier, e)
				continue
			}
			ref := e.ValueFrom.ConfigMapKeyRef
			if cmName != "" && ref.Name != cmName {
				t.Errorf("pod %s: barriers name two ConfigMaps, %s and %s", pod.Name, cmName, ref.Name)
			}
			cmName = ref.Name
			waited[c.Name] = ref.Key
		}
	}
	if wantKeys != nil {
		if fmt.Sprint(waited) != fmt.Sprint(wantKeys) {
			t.Errorf("pod %s: containers wait on keys %v, want %v", pod.Name, waited, wantKeys)
		}
	}
	if wantName != "" && cmName != wantName {
		t.Errorf("pod %s: barrier ConfigMap %q, want %q", pod.Name, cmName, wantName)
	}
	if cmName == "" {
		t.Fatalf("pod %s: no container waits on a barrier: %+v", pod.Name, pod.Spec.Containers)
	}
	cm, err := f.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading barrier ConfigMap %s: %v", cmName, err)
	}
	owner := metav1.GetControllerOf(cm)
	if owner == nil || owner.Kind != "Pod" || owner.UID != pod.UID {
		t.Errorf("ConfigMap %s is not controlled by pod %s (uid %s): owners %+v", cmName, pod.Name, pod.UID, cm.OwnerReferences)
	}
	for k, v := range cm.Data {
		if !strings.HasPrefix(k, lp.KeyPrefix) || v != lp.KeyValue {
			t.Errorf("ConfigMap %s: key %s=%q, want only %s*=%s", cmName, k, v, lp.KeyPrefix, lp.KeyValue)
		}
	}
	for c, k := range waited {
		if _, ok := cm.Data[k]; !ok {
			t.Errorf("ConfigMap %s lacks key %s that container %s waits on: %v", cmName, k, c, cm.Data)
		}
	}
	if got := pod.Annotations[lp.AnnotationCompleted]; got != "true" {
		t.Errorf("pod %s: annotation %s=%q, want true", pod.Name, lp.AnnotationCompleted, got)
	}
	return cmName
}

// Three priority levels on a bare pod, declared in the reverse of their launch order: the
// highest starts first, each next level only once the one above is Ready, so the containers'
// start times are strictly ordered by priority.
func TestLaunchPriorityBarePod(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "launch-priority")

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "three-levels", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{
				slowReadyContainer(f, "low"), // no env: priority 0
				slowReadyContainer(f, "mid", priorityEnv("1")),
				slowReadyContainer(f, "high", priorityEnv("10")),
			},
		},
	}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	got := waitLaunched(ctx, t, f, ns, pod.Name)
	checkStartOrder(t, got, "high", "mid", "low")
	checkBarrier(ctx, t, f, got, lp.BarrierName(pod.Name), map[string]string{"low": lp.Key(0), "mid": lp.Key(1)})
}

// A Deployment's pods (generateName, an owner other than kruise) launch in order too; here with
// the annotation Ordered, which launches the containers in spec order.
func TestLaunchPriorityDeployment(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "launch-priority-deploy")

	labels := map[string]string{"app": "ordered"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "ordered", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{lp.AnnotationPriority: lp.OrderedValue}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{
						slowReadyContainer(f, "first"),
						slowReadyContainer(f, "second"),
						slowReadyContainer(f, "third"),
					},
				},
			},
		},
	}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}
	var pods []corev1.Pod
	framework.WaitFor(ctx, t, 3*time.Minute, "2 pods of the Deployment launched", func(ctx context.Context) (bool, string, error) {
		list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=ordered"})
		if err != nil {
			return false, "", err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			ready := p.Annotations[lp.AnnotationCompleted] == "true" && len(p.Status.ContainerStatuses) == 3
			for _, st := range p.Status.ContainerStatuses {
				ready = ready && st.Ready
			}
			if ready {
				pods = append(pods, p)
			}
		}
		return len(pods) == 2, fmt.Sprintf("%d of %d pods launched", len(pods), len(list.Items)), nil
	})
	names := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		checkStartOrder(t, p, "first", "second", "third")
		// Ordered: priorities 0, -1, -2 in spec order.
		cm := checkBarrier(ctx, t, f, p, "", map[string]string{"second": lp.Key(-1), "third": lp.Key(-2)})
		if !strings.HasPrefix(cm, p.GenerateName) || !strings.HasSuffix(cm, lp.BarrierSuffix) {
			t.Errorf("pod %s: barrier ConfigMap %s is not <generateName %s><token>%s", p.Name, cm, p.GenerateName, lp.BarrierSuffix)
		}
		if names[cm] {
			t.Errorf("two pods share barrier ConfigMap %s", cm)
		}
		names[cm] = true
	}
}

// What cannot work is refused at admission, with a message that says why: a container that sets
// KRUISE_CONTAINER_BARRIER itself, a priority that is not an integer, an annotation value other
// than Ordered.
func TestLaunchPriorityRefusals(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "launch-priority-refused")

	for _, tc := range []struct {
		name string
		pod  func(p *corev1.Pod)
		want []string
	}{{
		name: "barrier-set",
		pod: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: lp.EnvBarrier, Value: "go"}}
		},
		want: []string{`container "a": KRUISE_CONTAINER_BARRIER is reserved`, "spec.containers[0].env[0]"},
	}, {
		name: "priority-not-integer",
		pod: func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{priorityEnv("high")}
		},
		want: []string{`spec.containers[1].env[0].value: Invalid value: "high"`, `container "b": KRUISE_CONTAINER_PRIORITY must be an integer`},
	}, {
		name: "annotation-not-ordered",
		pod: func(p *corev1.Pod) {
			p.Annotations = map[string]string{lp.AnnotationPriority: "Sometimes"}
		},
		want: []string{lp.AnnotationPriority, `"Sometimes"`, `"Ordered"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := f.BusyboxPod(ns, tc.name, "a", "b")
			tc.pod(pod)
			_, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("pod %s was admitted", tc.name)
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("want 422 Invalid, got %v (%T)", err, err)
			}
			msg := err.Error()
			for _, want := range append([]string{`admission webhook "mpod.kb.io" denied the request`}, tc.want...) {
				if !strings.Contains(msg, want) {
					t.Errorf("refusal does not say %q: %s", want, msg)
				}
			}
			t.Logf("refused: %s", msg)
		})
	}
}

// The seed's Job (OpenKruise v1.7): a sidecar marked KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT with
// KRUISE_CONTAINER_PRIORITY=1 starts, and is Ready, before main; once main exits the sidecar
// terminator stops the sidecar and the Job completes. Both features act on the same pod.
func TestLaunchPrioritySidecarJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "launch-priority-job")
	img := f.Image("public/busybox:1.35")

	job := framework.SidecarJob(ns, "seed", corev1.RestartPolicyNever,
		slowReadyContainer(f, "sidecar", framework.SidecarMark(), priorityEnv("1")),
		framework.ShContainer("main", img, "echo main-done"))
	if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job: %v", err)
	}
	f.WaitJobComplete(ctx, t, ns, "seed", 3*time.Minute)
	pod := f.JobPod(ctx, t, ns, "seed")
	started := func(name string) time.Time {
		st := framework.ContainerStatusOf(pod, name)
		switch {
		case st == nil:
		case st.State.Running != nil:
			return st.State.Running.StartedAt.Time
		case st.State.Terminated != nil:
			return st.State.Terminated.StartedAt.Time
		}
		t.Fatalf("pod %s: container %s never started: %s", pod.Name, name, framework.DescribeSidecarPod(pod))
		return time.Time{}
	}
	sidecar, main := started("sidecar"), started("main")
	if !main.After(sidecar) {
		t.Errorf("main started at %s, not after the sidecar (%s): %s", main.Format(time.RFC3339), sidecar.Format(time.RFC3339),
			framework.DescribeSidecarPod(pod))
	}
	// A Job names its pods by generateName: the barrier is <generateName><token>-barrier.
	checkBarrier(ctx, t, f, pod, "", map[string]string{"main": lp.Key(0)})
}
