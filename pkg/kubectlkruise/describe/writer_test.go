package describe

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// A page aligns its columns, indents by level and escapes terminal control
// characters that an object's fields may carry.
func TestPage(t *testing.T) {
	tests := []struct {
		name  string
		write func(p *page)
		want  string
	}{
		{
			name: "aligned and indented",
			write: func(p *page) {
				p.line(0, "Name:\t%s", "web")
				p.line(1, "Replicas:\t%d", 3)
			},
			want: "Name:        web\n  Replicas:  3\n",
		},
		{
			name:  "control characters escaped",
			write: func(p *page) { p.keyValues("Labels", map[string]string{"team": "\x1b[31mred\r"}) },
			want:  "Labels:  team=^[[31mred\\r\n",
		},
		{
			name:  "no labels",
			write: func(p *page) { p.keyValues("Labels", nil) },
			want:  "Labels:  <none>\n",
		},
		{
			name:  "age from the page's now",
			write: func(p *page) { p.line(0, "Age:\t%s", p.age(ago(90*time.Minute))) },
			want:  "Age:  90m\n",
		},
		{
			name:  "unknown age",
			write: func(p *page) { p.line(0, "Age:\t%s", p.age(metav1.Time{})) },
			want:  "Age:  <unknown>\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPage(now)
			tt.write(p)
			if got := p.String(); got != tt.want {
				t.Errorf("page =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// A gate released to the kubelet (True, reason ContainersRestarting) is not a finished update.
func TestInPlaceUpdateReleasedGate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		pub.InPlaceUpdateStateKey: `{"revision":"web-7c9f","updateTimestamp":"2026-03-01T11:59:58Z","lastContainerStatuses":{},"containerBatchesRecord":[{"timestamp":"2026-03-01T11:59:58Z","containers":["app"]}]}`}}}
	for _, tc := range []struct {
		cond corev1.PodCondition
		want string
	}{
		{corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, Reason: pub.InPlaceUpdateRestartingReason},
			"to web-7c9f 2s ago, batch 1: app, containers restarting"},
		{corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}, "to web-7c9f 2s ago, batch 1: app"},
		{corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}, "to web-7c9f 2s ago, batch 1: app, not ready yet"},
	} {
		pod.Status.Conditions = []corev1.PodCondition{tc.cond}
		if got := newPage(now).inPlaceUpdate(pod); got != tc.want {
			t.Errorf("condition %s/%s: got %q, want %q", tc.cond.Status, tc.cond.Reason, got, tc.want)
		}
	}
}
