package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// The sidecar terminator's contract, spelled out here rather than imported from the controller so
// that a renamed constant shows up as a failing test.
const (
	// EnvTerminateSidecar marks a sidecar when its value is "true" (any case).
	EnvTerminateSidecar = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT"
	// EnvTerminateSidecarWithImage marks a sidecar when not empty.
	EnvTerminateSidecarWithImage = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE"
	// ConditionSidecarTerminated is the pod condition kruise-controller records with the phase.
	ConditionSidecarTerminated corev1.PodConditionType = "SidecarTerminated"
	// AnnotationSidecarTerminatedAt is set right after the phase is recorded.
	AnnotationSidecarTerminatedAt = "apps.kruise.io/sidecar-terminated-at"

	ReasonMainContainersSucceeded = "MainContainersSucceeded"
	ReasonMainContainersFailed    = "MainContainersFailed"

	EventTerminatingSidecars  = "TerminatingSidecars"
	EventSidecarKilled        = "SidecarKilled"
	EventInvalidSidecarEnv    = "InvalidSidecarEnv"
	EventSidecarImageReplaced = "SidecarImageReplaced"
	EventSidecarNotTerminated = "SidecarNotTerminated"
)

// Scripts for sh -c that sidecars run.
const (
	// ScriptUntilTERM runs until SIGTERM and then exits 143, so a terminated state with 143 proves
	// the container was signalled (and did not end on its own).
	ScriptUntilTERM = "trap 'exit 143' TERM; while true; do sleep 0.2; done"
	// ScriptIgnoreTERM ignores SIGTERM: only the SIGKILL at the end of the grace period stops it.
	ScriptIgnoreTERM = "trap '' TERM; while true; do sleep 0.2; done"
)

// SidecarMark is the env var that makes a container a sidecar.
func SidecarMark() corev1.EnvVar {
	return corev1.EnvVar{Name: EnvTerminateSidecar, Value: "true"}
}

// SidecarImageMark is the env var that makes a container a sidecar replaced by image on a
// virtual-kubelet node.
func SidecarImageMark(image string) corev1.EnvVar {
	return corev1.EnvVar{Name: EnvTerminateSidecarWithImage, Value: image}
}

// ShContainer returns a container of image running script with sh -c, with env.
func ShContainer(name, image, script string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Image: image, Command: []string{"sh", "-c", script}, Env: env}
}

// SidecarPodSpec returns a pod spec with the given restart policy and containers and a short
// grace period (2 s).
func SidecarPodSpec(restart corev1.RestartPolicy, containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                 restart,
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		Containers:                    containers,
	}
}

// SidecarJob returns a Job of one pod (no retries) with the given restart policy and containers.
func SidecarJob(namespace, name string, restart corev1.RestartPolicy, containers ...corev1.Container) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				Spec: SidecarPodSpec(restart, containers...),
			},
		},
	}
}

// SidecarPod returns a bare pod (restartPolicy Never) with the given containers.
func SidecarPod(namespace, name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       SidecarPodSpec(corev1.RestartPolicyNever, containers...),
	}
}

// WaitJobFailed waits for the Job's Failed condition and fails the test early when the Job
// completes instead.
func (f *Framework) WaitJobFailed(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var got *batchv1.Job
	WaitFor(ctx, t, timeout, fmt.Sprintf("job %s/%s Failed", namespace, name), func(ctx context.Context) (bool, string, error) {
		job, err := f.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = job
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobFailed:
				return true, "Failed", nil
			case batchv1.JobComplete:
				return false, "", fmt.Errorf("job completed, want Failed; pods: %s", f.DescribeSidecarPods(ctx, namespace, "job-name="+name))
			}
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d; pods: %s", job.Status.Active,
			job.Status.Succeeded, job.Status.Failed, f.DescribeSidecarPods(ctx, namespace, "job-name="+name)), nil
	})
	return got
}

// JobPod waits until the Job has exactly one pod and returns it.
func (f *Framework) JobPod(ctx context.Context, t testing.TB, namespace, job string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, time.Minute, "the pod of job "+job, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return false, "", err
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
		}
		got = &pods.Items[0]
		return true, "found", nil
	})
	return got
}

// WaitPod polls the pod until cond holds and returns it; cond also says what it saw.
func (f *Framework) WaitPod(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, desc string,
	cond func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, timeout, fmt.Sprintf("pod %s/%s: %s", namespace, name, desc), func(ctx context.Context) (bool, string, error) {
		pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = pod
		ok, err := cond(pod)
		if err != nil {
			return false, "", fmt.Errorf("%w; pod: %s", err, DescribeSidecarPod(pod))
		}
		return ok, DescribeSidecarPod(pod), nil
	})
	return got
}

// WaitPodPhase waits until the pod is in phase, failing early when it reaches another terminal
// phase.
func (f *Framework) WaitPodPhase(ctx context.Context, t testing.TB, namespace, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	t.Helper()
	return f.WaitPod(ctx, t, namespace, name, timeout, "phase "+string(phase), func(pod *corev1.Pod) (bool, error) {
		switch p := pod.Status.Phase; {
		case p == phase:
			return true, nil
		case p == corev1.PodSucceeded || p == corev1.PodFailed:
			return false, fmt.Errorf("pod reached phase %s, want %s", p, phase)
		}
		return false, nil
	})
}

// WaitContainersTerminated waits until every named container of the pod is terminated.
func (f *Framework) WaitContainersTerminated(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, containers ...string) *corev1.Pod {
	t.Helper()
	return f.WaitPod(ctx, t, namespace, name, timeout, fmt.Sprintf("containers %v terminated", containers), func(pod *corev1.Pod) (bool, error) {
		for _, c := range containers {
			st := ContainerStatusOf(pod, c)
			if st == nil || st.State.Terminated == nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// PodEvents lists the Events about the pod (matched by name and UID).
func (f *Framework) PodEvents(ctx context.Context, pod *corev1.Pod) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod.Name}
	if pod.UID != "" {
		sel["involvedObject.uid"] = string(pod.UID)
	}
	list, err := f.Client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("listing events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return list.Items, nil
}

// WaitPodEvent waits for an Event about the pod with reason whose message contains every one of
// substrings, and returns it.
func (f *Framework) WaitPodEvent(ctx context.Context, t testing.TB, pod *corev1.Pod, reason string, timeout time.Duration, substrings ...string) corev1.Event {
	t.Helper()
	var got corev1.Event
	WaitFor(ctx, t, timeout, fmt.Sprintf("event %s containing %q on pod %s/%s", reason, substrings, pod.Namespace, pod.Name),
		func(ctx context.Context) (bool, string, error) {
			events, err := f.PodEvents(ctx, pod)
			if err != nil {
				return false, "", err
			}
			for _, e := range events {
				if e.Reason == reason && containsAll(e.Message, substrings) {
					got = e
					return true, "found", nil
				}
			}
			return false, "events: " + describeEvents(events) + "; pod: " + f.describeSidecarPodByName(ctx, pod.Namespace, pod.Name), nil
		})
	return got
}

// EventsWithReason returns the Events about the pod with reason.
func (f *Framework) EventsWithReason(ctx context.Context, t testing.TB, pod *corev1.Pod, reason string) []corev1.Event {
	t.Helper()
	events, err := f.PodEvents(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// PodConditionOf returns the pod's condition of type ct, or nil.
func PodConditionOf(pod *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	c := PodConditionOf(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// ContainerStatusOf returns the status of the named regular container, or nil.
func ContainerStatusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// ContainerSpecOf returns the spec of the named regular container, or nil.
func ContainerSpecOf(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// StoppingSidecars returns the sidecar names the SidecarTerminated condition's message lists
// after "stopping sidecars", sorted.
func StoppingSidecars(cond *corev1.PodCondition) []string {
	if cond == nil {
		return nil
	}
	const marker = "stopping sidecars "
	i := strings.LastIndex(cond.Message, marker)
	if i < 0 {
		return nil
	}
	var out []string
	for _, n := range strings.Split(cond.Message[i+len(marker):], ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// DescribeSidecarPod summarises the pod's phase, container states (with restart counts),
// conditions and the sidecar annotation, for failure messages.
func DescribeSidecarPod(pod *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(describePod(pod))
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			fmt.Fprintf(&b, " %s.restarts=%d", cs.Name, cs.RestartCount)
		}
	}
	for _, c := range pod.Status.Conditions {
		fmt.Fprintf(&b, " [%s=%s", c.Type, c.Status)
		if c.Reason != "" || c.Message != "" {
			fmt.Fprintf(&b, " %s: %s", c.Reason, c.Message)
		}
		b.WriteString("]")
	}
	if at, ok := pod.Annotations[AnnotationSidecarTerminatedAt]; ok {
		fmt.Fprintf(&b, " %s=%s", AnnotationSidecarTerminatedAt, at)
	}
	return b.String()
}

// DescribeSidecarPods is DescribeSidecarPod for the pods matching selector.
func (f *Framework) DescribeSidecarPods(ctx context.Context, namespace, selector string) string {
	pods, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "listing pods: " + err.Error()
	}
	var parts []string
	for i := range pods.Items {
		parts = append(parts, DescribeSidecarPod(&pods.Items[i]))
	}
	if len(parts) == 0 {
		return "no pods"
	}
	return strings.Join(parts, "; ")
}

// DescribePodWithEvents describes the pod as it is now, with its Events, for failure messages.
func (f *Framework) DescribePodWithEvents(ctx context.Context, namespace, name string) string {
	pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "getting pod: " + err.Error()
	}
	events, err := f.PodEvents(ctx, pod)
	if err != nil {
		return DescribeSidecarPod(pod) + "; " + err.Error()
	}
	return DescribeSidecarPod(pod) + "; events: " + describeEvents(events)
}

func (f *Framework) describeSidecarPodByName(ctx context.Context, namespace, name string) string {
	pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "getting pod: " + err.Error()
	}
	return DescribeSidecarPod(pod)
}

func describeEvents(events []corev1.Event) string {
	if len(events) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(events))
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return strings.Join(parts, " | ")
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// CreateVirtualKubeletNode creates a Node object labelled type=virtual-kubelet, with no kubelet
// behind it and a NoSchedule taint so that nothing is scheduled there, and deletes it when the
// test ends. It returns the node's name.
func (f *Framework) CreateVirtualKubeletNode(ctx context.Context, t testing.TB) string {
	t.Helper()
	name := "vk-" + rand.String(6)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"type": "virtual-kubelet", "kruise.e2e/test": "true"},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: "kruise.e2e/virtual-kubelet", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	return name
}

// DeletePodNow deletes the pod with grace period 0 when the test ends (needed for pods on nodes
// without a kubelet, which nobody else would finish deleting).
func (f *Framework) DeletePodNow(t testing.TB, namespace, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := f.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s/%s: %v", namespace, name, err)
		}
	})
}
