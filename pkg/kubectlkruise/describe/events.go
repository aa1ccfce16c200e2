package describe

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// maxEvents is how many of the newest Events are shown, as kubectl does.
const maxEvents = 500

// events writes the object's Events in kubectl describe's table, oldest
// first. An object whose Events cannot be read is described without them.
// (kubectl's describe.DescribeEvents is not used: it measures ages with the
// wall clock rather than the page's now, so its output cannot be pinned in
// a test, and it ages a single Event by when it was first seen, not last.)
func (o *Options) events(ctx context.Context, p *page, namespace, kind, name string, uid types.UID) {
	selector := fields.Set{"involvedObject.name": name, "involvedObject.kind": kind}
	if namespace != "" {
		selector["involvedObject.namespace"] = namespace
	}
	list, err := o.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: selector.AsSelector().String()})
	if err != nil {
		p.line(0, "Events:\t<cannot list: %v>", err)
		return
	}
	var events []corev1.Event
	for _, e := range list.Items {
		// Filtered again here: the UID tells a deleted and recreated
		// object's Events apart.
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == kind && (uid == "" || e.InvolvedObject.UID == "" || e.InvolvedObject.UID == uid) {
			events = append(events, e)
		}
	}
	if len(events) == 0 {
		p.line(0, "Events:\t<none>")
		return
	}
	sort.SliceStable(events, func(i, j int) bool { return lastSeen(events[i]).Time.Before(lastSeen(events[j]).Time) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	p.line(0, "Events:")
	p.line(1, "Type\tReason\tAge\tFrom\tMessage")
	p.line(1, "----\t------\t----\t----\t-------")
	for _, e := range events {
		age := p.age(lastSeen(e))
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.Count, p.age(firstSeen(e)))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		p.line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, age, from, e.Message)
	}
}

func lastSeen(e corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case e.Series != nil:
		return metav1.Time{Time: e.Series.LastObservedTime.Time}
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}

func firstSeen(e corev1.Event) metav1.Time {
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp
	}
	if !e.EventTime.IsZero() {
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}
