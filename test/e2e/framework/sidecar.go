package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func (f *Framework) describeSidecarPodByName(ctx context.Context, namespace, name string) string {
	pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "getting pod: " + err.Error()
	}
	return DescribeSidecarPod(pod)
}
