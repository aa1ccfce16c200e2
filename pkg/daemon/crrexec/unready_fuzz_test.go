package crrexec

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// secondsLater reports whether since+seconds (seconds >= 0) is after now,
// without overflowing time.Duration: a grace too large for a Duration is
// centuries, after any now the test uses.
func secondsLater(since, now time.Time, seconds int64) bool {
	if seconds > math.MaxInt64/int64(time.Second) {
		return true
	}
	return now.Before(since.Add(time.Duration(seconds) * time.Second))
}

// FuzzUnreadyWait checks the unready grace of a CRR's first kill, which
// reads spec.strategy.unreadyGracePeriodSeconds (any int64) and the
// controller's crr.apps.kruise.io/unready-acquired annotation (any text).
// Invariants: no panic; deterministic; the wait is never negative nor
// longer than the grace (plus the clock skew when the transition is in the
// node's future); no grace, or a pod without the readiness gate,
// means no wait; a pod not shown not-ready yet means wait for its next
// event; an annotation that is not an RFC 3339 time counts as absent, one
// after the condition's transition means wait for the next event; and
// otherwise the kill waits exactly while the grace (however large) has not
// passed since the transition.
func FuzzUnreadyWait(f *testing.F) {
	f.Add(int64(30), true, uint8(0), int32(-10), true, "2025-01-02T03:04:00Z")
	f.Add(int64(30), true, uint8(0), int32(-40), false, "")
	f.Add(int64(30), true, uint8(0), int32(-10), true, "not a time")
	f.Add(int64(30), true, uint8(0), int32(-10), true, "2025-01-02T03:03:00Z")
	f.Add(int64(30), true, uint8(0), int32(-10), true, "2025-01-02T03:04:05.999999999+14:00")
	f.Add(int64(30), false, uint8(0), int32(-10), false, "")
	f.Add(int64(30), true, uint8(1), int32(-10), false, "")
	f.Add(int64(30), true, uint8(2), int32(-10), false, "")
	f.Add(int64(0), true, uint8(0), int32(-10), false, "")
	f.Add(int64(-5), true, uint8(0), int32(-10), false, "")
	f.Add(int64(math.MaxInt64), true, uint8(0), int32(-10), false, "")
	f.Add(int64(9223372037), true, uint8(0), int32(-100), false, "")
	f.Add(int64(30), true, uint8(0), int32(100), false, "")
	f.Fuzz(func(t *testing.T, g int64, declared bool, cond uint8, sinceOffset int32, hasAnn bool, ann string) {
		now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		e := &Executor{
			clock:    clocktesting.NewFakeClock(now),
			recorder: record.NewFakeRecorder(10),
			warned:   map[string]bool{},
		}
		crr := &appsv1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "crr", Namespace: "ns", UID: "uid"}}
		crr.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: &g}
		if hasAnn {
			crr.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: ann}
		}
		since := now.Add(time.Duration(sinceOffset) * time.Second)
		pod := &corev1.Pod{}
		if declared {
			pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}
		}
		switch cond % 3 {
		case 0:
			pod.Status.Conditions = []corev1.PodCondition{{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(since)}}
		case 1:
			pod.Status.Conditions = []corev1.PodCondition{{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
		}

		d, wait := e.unreadyWait(crr, pod, klog.Background())
		if d2, wait2 := e.unreadyWait(crr, pod, klog.Background()); d2 != d || wait2 != wait {
			t.Fatalf("not deterministic: %v %t, then %v %t", d, wait, d2, wait2)
		}
		if d < 0 || (!wait && d != 0) {
			t.Fatalf("unreadyWait = %v, %t", d, wait)
		}
		// A transition in the future of the node's clock (skew) is waited
		// for too.
		if skew := max(since.Sub(now), 0); g > 0 && g <= math.MaxInt64/int64(time.Second) && d-skew > time.Duration(g)*time.Second {
			t.Fatalf("waits %v, more than the grace of %ds", d, g)
		}
		acquired, annErr := time.Parse(time.RFC3339, ann)
		switch {
		case g <= 0 || !declared:
			if wait {
				t.Fatalf("grace %d, gate declared %t: waits %v", g, declared, d)
			}
		case cond%3 != 0:
			if !wait || d != 0 {
				t.Fatalf("pod not shown not-ready: %v, %t; want to wait for the next event", d, wait)
			}
		case hasAnn && annErr == nil && since.Before(acquired):
			if !wait || d != 0 {
				t.Fatalf("annotation %q after the transition %v: %v, %t; want to wait for the next event", ann, since, d, wait)
			}
		default:
			want := secondsLater(since, now, g)
			if wait != want {
				t.Fatalf("grace %ds since %v (now %v): wait %t, want %t", g, since, now, wait, want)
			}
		}
	})
}

// FuzzGrace checks the termination grace of a recreate: the CRR's
// terminationGracePeriodSeconds, else the pod's, else 30 s. Invariants: no
// panic; a non-negative number of seconds never gives a negative grace, and
// a larger one never a shorter grace.
func FuzzGrace(f *testing.F) {
	f.Add(true, int64(10), true, int64(20))
	f.Add(false, int64(10), true, int64(20))
	f.Add(false, int64(0), false, int64(0))
	f.Add(true, int64(0), true, int64(20))
	f.Add(true, int64(math.MaxInt64), false, int64(0))
	f.Add(false, int64(0), true, int64(9223372037))
	f.Fuzz(func(t *testing.T, crrSet bool, crrSeconds int64, podSet bool, podSeconds int64) {
		var s appsv1alpha1.ContainerRecreateRequestStrategy
		pod := &corev1.Pod{}
		if crrSet {
			s.TerminationGracePeriodSeconds = &crrSeconds
		}
		if podSet {
			pod.Spec.TerminationGracePeriodSeconds = &podSeconds
		}
		got := grace(s, pod)
		seconds, set := crrSeconds, crrSet
		if !crrSet {
			seconds, set = podSeconds, podSet
		}
		switch {
		case !set:
			if got != defaultGrace {
				t.Fatalf("no grace set: %v, want %v", got, defaultGrace)
			}
		case seconds >= 0:
			if got < 0 {
				t.Fatalf("grace of %ds gives %v", seconds, got)
			}
			if seconds < math.MaxInt64 {
				one := seconds + 1
				more := s
				morePod := pod.DeepCopy()
				if crrSet {
					more.TerminationGracePeriodSeconds = &one
				} else {
					morePod.Spec.TerminationGracePeriodSeconds = &one
				}
				if longer := grace(more, morePod); longer < got {
					t.Fatalf("grace of %ds gives %v, of %ds %v", seconds, got, one, longer)
				}
			}
		}
	})
}
