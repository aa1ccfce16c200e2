package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BusyboxJob returns a Job of one busybox pod running script with sh -c. Grace periods are short
// and the Job does not retry, so a failure shows at once.
func BusyboxJob(namespace, name, image, script string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name:    "main",
						Image:   image,
						Command: []string{"sh", "-c", script},
					}},
				},
			},
		},
	}
}

// WaitJobComplete waits for the Job's Complete condition and fails the test early when the Job
// fails, with the reasons its pods show.
func (f *Framework) WaitJobComplete(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration) {
	t.Helper()
	WaitFor(ctx, t, timeout, fmt.Sprintf("job %s/%s Complete", namespace, name), func(ctx context.Context) (bool, string, error) {
		job, err := f.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		switch complete, failed := JobOutcome(job); {
		case complete:
			return true, "Complete", nil
		case failed != nil:
			return false, "", fmt.Errorf("job failed: %s: %s; pods: %s", failed.Reason, failed.Message, f.DescribePods(ctx, namespace, "job-name="+name))
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d; pods: %s", job.Status.Active,
			job.Status.Succeeded, job.Status.Failed, f.DescribePods(ctx, namespace, "job-name="+name)), nil
	})
}

// WaitPodWaitingReason waits until some container of the pod is waiting with one of reasons and
// returns that container's state message.
func (f *Framework) WaitPodWaitingReason(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, reasons ...string) string {
	t.Helper()
	var msg string
	WaitFor(ctx, t, timeout, fmt.Sprintf("pod %s/%s waiting with %v", namespace, name, reasons), func(ctx context.Context) (bool, string, error) {
		pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				for _, r := range reasons {
					if w.Reason == r {
						msg = w.Message
						return true, r, nil
					}
				}
			}
		}
		return false, describePod(pod), nil
	})
	return msg
}

// PodLogs returns the logs of one container of a pod (through the API server and the kubelet).
func (f *Framework) PodLogs(ctx context.Context, namespace, pod, container string) (string, error) {
	raw, err := f.Client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s[%s]: %w", namespace, pod, container, err)
	}
	return string(raw), nil
}

// DescribePods summarises the phase and container states of the pods matching selector, for
// failure messages.
func (f *Framework) DescribePods(ctx context.Context, namespace, selector string) string {
	pods, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "listing pods: " + err.Error()
	}
	var parts []string
	for i := range pods.Items {
		parts = append(parts, describePod(&pods.Items[i]))
	}
	if len(parts) == 0 {
		return "no pods"
	}
	return strings.Join(parts, "; ")
}

func describePod(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s", pod.Name, pod.Status.Phase)
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, " %s=waiting(%s: %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Running != nil:
			fmt.Fprintf(&b, " %s=running(ready=%t)", cs.Name, cs.Ready)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, " %s=terminated(%d %s)", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		}
	}
	return b.String()
}

// JobOutcome reads a Job's conditions: complete once it is Complete, failed (the condition) once
// it Failed.
func JobOutcome(job *batchv1.Job) (complete bool, failed *batchv1.JobCondition) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			return false, c
		}
	}
	return false, nil
}
