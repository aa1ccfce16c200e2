package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// ObjectEvents lists the Events in namespace about the object of kind and name ("" namespace
// for a cluster-scoped object's Events, which live in "default").
func (f *Framework) ObjectEvents(ctx context.Context, namespace, kind, name string) ([]corev1.Event, error) {
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}
	list, err := f.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("listing events of %s %s/%s: %w", kind, namespace, name, err)
	}
	return list.Items, nil
}

// HasEvent reports whether events hold one with reason whose message contains every one of
// substrings, and describes them all for failure messages.
func HasEvent(events []corev1.Event, reason string, substrings ...string) (bool, string) {
	for _, e := range events {
		if e.Reason == reason && containsAll(e.Message, substrings) {
			return true, ""
		}
	}
	return false, "events: " + describeEvents(events)
}

// WaitObjectEvent waits for an Event about the object of kind and name in namespace with reason
// whose message contains every one of substrings: Events are recorded after the write they tell
// of, through a queue, so one may show a moment after what it reports.
func (f *Framework) WaitObjectEvent(ctx context.Context, t testing.TB, namespace, kind, name, reason string, timeout time.Duration, substrings ...string) {
	t.Helper()
	WaitFor(ctx, t, timeout, fmt.Sprintf("event %s containing %q on %s %s/%s", reason, substrings, kind, namespace, name),
		func(ctx context.Context) (bool, string, error) {
			events, err := f.ObjectEvents(ctx, namespace, kind, name)
			if err != nil {
				return false, "", err
			}
			ok, desc := HasEvent(events, reason, substrings...)
			return ok, desc, nil
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
